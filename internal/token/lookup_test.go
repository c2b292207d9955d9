package token_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/capk3s/capk3s/internal/token"
)

func TestLookup(t *testing.T) {
	t.Run("absent", func(t *testing.T) {
		f := newFixture(t)
		tok, found, err := token.Lookup(t.Context(), env.Client, f.cluster)
		if err != nil {
			t.Fatalf("Lookup: %v", err)
		}
		if found || tok != (token.Token{}) {
			t.Errorf("found = %v with a non-empty token %v: want nothing", found, found)
		}
	})

	t.Run("created by Reconcile", func(t *testing.T) {
		f := newFixture(t)
		if res := f.reconcile(t, env.Client); res.Outcome != token.Created {
			t.Fatalf("Outcome = %s", res.Outcome)
		}
		s := f.tokenSecret(t)
		tok, found, err := token.Lookup(t.Context(), env.Client, f.cluster)
		if err != nil || !found {
			t.Fatalf("Lookup: found = %v, err = %v", found, err)
		}
		if tok.Server != string(s.Data[token.ServerKey]) || tok.Agent != string(s.Data[token.AgentKey]) {
			t.Error("Lookup's passphrases differ from the Secret's")
		}
		if tok.Server == "" || !tok.HasAgentToken() {
			t.Error("Lookup returned an empty passphrase for a generated token")
		}
	})

	t.Run("server passphrase only", func(t *testing.T) {
		f := newFixture(t)
		mustCreate(t, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: token.SecretName(f.cluster.Name)},
			Type:       clusterv1.ClusterSecretType,
			Data:       map[string][]byte{token.ServerKey: []byte("legacy")},
		})
		tok, found, err := token.Lookup(t.Context(), env.Client, f.cluster)
		if err != nil || !found {
			t.Fatalf("Lookup: found = %v, err = %v", found, err)
		}
		if tok.Server != "legacy" || tok.Agent != "" || tok.HasAgentToken() {
			t.Errorf("token = {Server:%q Agent:%q}, want {Server:legacy Agent:}", tok.Server, tok.Agent)
		}
	})

	t.Run("no server passphrase", func(t *testing.T) {
		f := newFixture(t)
		mustCreate(t, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: token.SecretName(f.cluster.Name)},
			Data:       map[string][]byte{token.AgentKey: []byte("agent-only")},
		})
		_, found, err := token.Lookup(t.Context(), env.Client, f.cluster)
		if err == nil {
			t.Fatal("no error for a Secret without a server passphrase")
		}
		if found {
			t.Error("found = true along with an error")
		}
		requireNoPassphrase(t, err.Error(), "agent-only")
	})

	t.Run("another cluster's Secret is not used", func(t *testing.T) {
		f := newFixture(t)
		mustCreate(t, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: token.SecretName("c2")},
			Data:       map[string][]byte{token.ServerKey: []byte("c2-pass")},
		})
		_, found, err := token.Lookup(t.Context(), env.Client, f.cluster)
		if err != nil || found {
			t.Errorf("found = %v, err = %v; want not found", found, err)
		}
	})

	t.Run("read error", func(t *testing.T) {
		f := newFixture(t)
		getErr := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "c1-token", errors.New("RBAC says no"))
		c, _ := failingClient(t, getErr)
		_, found, err := token.Lookup(context.Background(), c, f.cluster)
		if err == nil {
			t.Fatal("no error when reading the Secret failed")
		}
		if !apierrors.IsForbidden(err) || !errors.Is(err, getErr) {
			t.Errorf("error %v does not wrap the Forbidden error", err)
		}
		if found {
			t.Error("found = true along with an error")
		}
	})
}
