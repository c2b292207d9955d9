package token

import (
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"
)

const (
	// ServerKey holds the server passphrase; the name is cluster-api-k3s's, so Secrets
	// made by it keep working.
	ServerKey = "value"
	// AgentKey holds the agent passphrase, present on clusters created by capk3s.
	AgentKey = "agent-value"
)

// Purpose is the token Secret's name suffix, as CAPI's util/secret names the
// suffixes of the CA and kubeconfig Secrets.
const Purpose secret.Purpose = "token"

// SecretName is the name of a cluster's token Secret.
func SecretName(clusterName string) string { return secret.Name(clusterName, Purpose) }

// Token is a cluster's pair of passphrases, without the CA hash.
type Token struct {
	// Server is the server passphrase (k3s "token").
	Server string
	// Agent is the agent passphrase (k3s "agent-token"); empty for clusters taken over
	// without one, whose agents use the server passphrase.
	Agent string
}

// String never shows the passphrases, so a Token that reaches a log by mistake stays secret.
func (t Token) String() string { return "token(redacted)" }

// GoString keeps %#v from printing the passphrases too.
func (t Token) GoString() string { return t.String() }

// Format makes every fmt verb print String: without it, verbs that do not use String
// (%d, %t, %o...) print the struct's fields, passphrases included.
func (t Token) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, t.String()) }

// HasAgentToken reports whether agents get their own passphrase.
func (t Token) HasAgentToken() bool { return t.Agent != "" }

func fromSecret(s *corev1.Secret) (Token, error) {
	server := string(s.Data[ServerKey])
	if server == "" {
		return Token{}, fmt.Errorf("join token Secret %s/%s has no %q key", s.Namespace, s.Name, ServerKey)
	}
	return Token{Server: server, Agent: string(s.Data[AgentKey])}, nil
}

func newSecret(cluster *clusterv1.Cluster, t Token) *corev1.Secret {
	data := map[string][]byte{ServerKey: []byte(t.Server)}
	if t.Agent != "" {
		data[AgentKey] = []byte(t.Agent)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: cluster.Namespace,
			Name:      SecretName(cluster.Name),
			Labels:    map[string]string{clusterv1.ClusterNameLabel: cluster.Name},
		},
		Type: clusterv1.ClusterSecretType,
		Data: data,
	}
}
