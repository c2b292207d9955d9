package bootstrap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/capk3s/capk3s/internal/token"
)

// These tests only read one Secret, so a fake client stands in for the apiserver;
// reading through a real one is covered by internal/token's integration tests.

var testCA = []byte("-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n")

func caHash() string {
	sum := sha256.Sum256(testCA)
	return hex.EncodeToString(sum[:])
}

func tokenSecret(data map[string]string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: token.SecretName("c1")},
		Data:       map[string][]byte{},
	}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func newReader(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

func TestJoinTokenOptions(t *testing.T) {
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1"}}
	withAgent := tokenSecret(map[string]string{token.ServerKey: "srv", token.AgentKey: "agt"})
	serverOnly := tokenSecret(map[string]string{token.ServerKey: "srv"})
	h := caHash()

	cases := []struct {
		name   string
		secret *corev1.Secret
		role   Role
		want   TokenOptions
	}{
		{"server of a cluster with an agent token", withAgent, Server,
			TokenOptions{Token: "K10" + h + "::server:srv", AgentToken: "K10" + h + "::node:agt"}},
		{"agent of a cluster with an agent token", withAgent, Agent,
			TokenOptions{Token: "K10" + h + "::node:agt"}},
		{"server of a taken-over cluster", serverOnly, Server,
			TokenOptions{Token: "K10" + h + "::server:srv"}},
		{"agent of a taken-over cluster uses the server token", serverOnly, Agent,
			TokenOptions{Token: "K10" + h + "::server:srv"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, found, err := JoinTokenOptions(context.Background(), newReader(t, tc.secret), cluster, tc.role, testCA)
			if err != nil || !found {
				t.Fatalf("JoinTokenOptions = found %v, err %v; want found, no error", found, err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if tc.role == Agent && strings.Contains(got.Token, "srv") && tc.secret.Data[token.AgentKey] != nil {
				t.Errorf("an agent was given the server passphrase")
			}
		})
	}
}

func TestJoinTokenOptionsWaitsForTheSecret(t *testing.T) {
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1"}}
	got, found, err := JoinTokenOptions(context.Background(), newReader(t), cluster, Server, testCA)
	if err != nil || found || got != (TokenOptions{}) {
		t.Errorf("without a Secret: got %+v, found %v, err %v; want nothing, not found, no error", got, found, err)
	}
}

func TestJoinTokenOptionsErrors(t *testing.T) {
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1"}}
	secret := tokenSecret(map[string]string{token.ServerKey: "srv"})

	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, secret.Name, errors.New("no"))
	failing := interceptor.NewClient(newReader(t, secret), interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return forbidden
		},
	})
	if _, found, err := JoinTokenOptions(context.Background(), failing, cluster, Server, testCA); !apierrors.IsForbidden(err) || found {
		t.Errorf("API error: found %v, err %v; want the Forbidden error", found, err)
	}
	if _, _, err := JoinTokenOptions(context.Background(), newReader(t, secret), cluster, Server, nil); err == nil {
		t.Error("no CA: want an error, since an unpinned token would trust any server")
	}
	if _, _, err := JoinTokenOptions(context.Background(), newReader(t, secret), cluster, "worker", testCA); err == nil {
		t.Error("unknown role: want an error")
	}
	if s := (TokenOptions{Token: "K10abc::server:srv"}).String(); strings.Contains(s, "srv") {
		t.Errorf("String() leaks the token: %q", s)
	}
}
