package controlplane

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// staleReads is a client whose reads of one control plane return a copy made earlier
// (an informer that lags behind), and which counts every write.
func staleReads(t *testing.T, stale *controlplanev1.KThreesControlPlane, writes *int) client.Client {
	t.Helper()
	inner, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return interceptor.NewClient(inner, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if kcp, ok := obj.(*controlplanev1.KThreesControlPlane); ok && key == client.ObjectKeyFromObject(stale) {
				stale.DeepCopyInto(kcp)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			*writes++
			return c.Patch(ctx, obj, p, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			*writes++
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	})
}

// A pass that reads a control plane at a version this controller has already
// written over does nothing; the same read without that knowledge writes again.
func TestAPassFromBeforeTheControllersOwnWriteIsSkipped(t *testing.T) {
	ns := env.NewNamespace(t)
	_, kcp := newClusterWithControlPlane(t, ns, true)
	stale := readControlPlane(t, kcp)
	key := client.ObjectKeyFromObject(kcp)

	// A first pass (paused cluster: it records the Paused condition) replaces the
	// version just read.
	writes := 0
	first := &Reconciler{Client: staleReads(t, stale, &writes), ClusterCache: nil, writes: newOwnWrites()}
	if _, err := first.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if writes == 0 {
		t.Fatal("the first pass wrote nothing; the test needs a pass that writes")
	}
	first.writes.record(key, []string{stale.ResourceVersion})

	// The cache still shows the old version: the next pass is skipped.
	writes = 0
	if _, err := first.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if writes != 0 {
		t.Fatalf("a pass from a version this controller replaced wrote %d times", writes)
	}

	// Without the record the same stale read leads to writes again, which is what
	// the skip saves (they conflict with the stored version, and CAPI's Paused
	// condition helper, retrying on the stale read, gives up with an error).
	writes = 0
	other := &Reconciler{Client: staleReads(t, stale, &writes), writes: newOwnWrites()}
	_, _ = other.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})
	if writes == 0 {
		t.Fatal("a pass from the stale read wrote nothing even without the record: the skip is not what is tested")
	}
}
