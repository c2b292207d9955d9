package token_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/token"
)

// A controller's cached copy of the control plane may not show the initialization
// yet. With a live reader, Reconcile asks the apiserver before it generates a token,
// and reports the token lost instead of replacing it.
func TestLiveReaderStopsAStaleCopyFromReplacingALostToken(t *testing.T) {
	f := newFixture(t)
	stale := f.kcp.DeepCopy() // as a lagging cache would still have it
	f.markInitialized(t)

	res, err := token.Reconcile(t.Context(), env.Client, f.cluster, stale, token.WithLiveReader(env.Client))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != token.Lost {
		t.Errorf("Outcome = %s, want %s: the live reader says the cluster is initialized", res.Outcome, token.Lost)
	}
	err = env.Client.Get(t.Context(), client.ObjectKey{Namespace: f.ns, Name: token.SecretName(f.cluster.Name)}, &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("a token Secret was created from a stale copy (Get = %v)", err)
	}

	// Without the live reader the stale copy wins: this is the hazard the option removes.
	if res, err := token.Reconcile(t.Context(), env.Client, f.cluster, stale); err != nil || res.Outcome != token.Created {
		t.Errorf("without a live reader: Outcome %s, err %v; want %s (shows the test can fail)", res.Outcome, err, token.Created)
	}
}
