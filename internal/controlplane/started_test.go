package controlplane

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capk3s/capk3s/internal/token"
	"github.com/capk3s/capk3s/test/envtest"
)

// The pass that creates a new cluster's CAs and join token asks the API server once
// whether a server may already hold them (the Cluster, the control plane, their
// Machines and configs, read live), not once for the CAs and again for the token.
func TestThePassThatCreatesTheSecretsAsksOnceWhetherServersMayHoldThem(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster, kcp := newClusterWithControlPlane(t, ns, false)
	live, err := env.NewCountingClient()
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: env.Client, APIReader: live, writes: newOwnWrites()}
	tokenKey := client.ObjectKey{Namespace: ns, Name: token.SecretName(cluster.Name)}
	for pass := 1; pass <= 5; pass++ {
		live.Reset()
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(kcp)}); err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		err := env.Client.Get(context.Background(), tokenKey, &corev1.Secret{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		// This pass created the CAs and the token: one check, two reads and two lists.
		if gets, lists := live.Count(envtest.VerbGet), live.Count(envtest.VerbList); gets != 2 || lists != 2 {
			t.Errorf("the pass that created the CAs and the token read live %d times and listed %d times; want 2 reads (Cluster, control plane) and 2 lists (Machines, configs): %v",
				gets, lists, live.Counts())
		}
		return
	}
	t.Fatal("no pass created the join token")
}
