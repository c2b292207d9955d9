package bootstrap

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// answers409 is a real client that records the writes answered 409 (Conflict or
// AlreadyExists).
func answers409(t *testing.T) (client.Client, *[]string) {
	t.Helper()
	inner, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	record := func(what string, obj client.Object, err error) error {
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			got = append(got, what+" "+obj.GetName())
		}
		return err
	}
	return interceptor.NewClient(inner, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return record("create", obj, c.Create(ctx, obj, opts...))
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			return record("patch", obj, c.Patch(ctx, obj, p, opts...))
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			return record("patch "+sub, obj, c.SubResource(sub).Patch(ctx, obj, p, opts...))
		},
	}), &got
}

// KThreesControlPlane makes its second server as soon as it sees the first one's
// etcd member, often before CAPI has copied "initialized" into the Cluster. That
// server's config finds the init lock taken, and waits for the Cluster, without a
// create that the API server answers AlreadyExists; the holder's own passes keep the
// lock, again without one.
func TestAServerWaitingForTheInitLockMeetsNo409(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newReadyCluster(t, ns)
	createToken(t, cluster)
	first := newMachineWithConfig(t, cluster, "server-a", true, bootstrapv1.KThreesConfigSpec{})
	second := newMachineWithConfig(t, cluster, "server-b", true, bootstrapv1.KThreesConfigSpec{})
	c, got409 := answers409(t)
	r := &Reconciler{Client: c, APIReader: env.Client}

	reconcileOnce := func(config *bootstrapv1.KThreesConfig) {
		t.Helper()
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(config)}); err != nil {
			t.Fatal(err)
		}
	}
	reconcileOnce(first)
	if got := getConfig(t, first); !ptr.Deref(got.Status.Initialization.DataSecretCreated, false) {
		t.Fatalf("the first server got no data: %+v", got.Status)
	}
	reconcileOnce(second)
	got := getConfig(t, second)
	if c := conditions.Get(got, bootstrapv1.DataSecretAvailableCondition); c == nil || c.Reason != bootstrapv1.WaitingForInitLockReason {
		t.Fatalf("the second server's DataSecretAvailable: %+v, want reason %s", c, bootstrapv1.WaitingForInitLockReason)
	}
	if held, err := acquireInitLock(context.Background(), c, cluster, first.Name); err != nil || !held {
		t.Fatalf("the holder lost the lock: held %v, %v", held, err)
	}
	if len(*got409) != 0 {
		t.Errorf("answered 409: %v", *got409)
	}
}

// The joining configs of a cluster that has just been initialized all pass at once
// (the Cluster's update wakes every one of them): the init lock is deleted by one of
// them, not by each pass that started before the first delete returned.
func TestConcurrentJoiningPassesReleaseTheInitLockOnce(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newInitializedCluster(t, ns)
	a := newMachineWithConfig(t, cluster, "agent-a", false, bootstrapv1.KThreesConfigSpec{})
	b := newMachineWithConfig(t, cluster, "agent-b", false, bootstrapv1.KThreesConfigSpec{})
	inner, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var r *Reconciler
	deletes := 0
	reconcile := func(config *bootstrapv1.KThreesConfig) error {
		_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(config)})
		return err
	}
	var secondErr error
	c := interceptor.NewClient(inner, interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if _, ok := obj.(*corev1.ConfigMap); ok {
				deletes++
				if deletes == 1 {
					// The second config's pass runs while the first one's delete is
					// on its way.
					secondErr = reconcile(b)
				}
			}
			return c.Delete(ctx, obj, opts...)
		},
	})
	r = &Reconciler{Client: c, APIReader: env.Client}
	if err := reconcile(a); err != nil {
		t.Fatal(err)
	}
	if secondErr != nil {
		t.Fatal(secondErr)
	}
	for _, config := range []*bootstrapv1.KThreesConfig{a, b} {
		if !ptr.Deref(getConfig(t, config).Status.Initialization.DataSecretCreated, false) {
			t.Fatalf("%s rendered no data", config.Name)
		}
	}
	if deletes != 1 {
		t.Errorf("two joining passes deleted the init lock %d times; want 1", deletes)
	}
}
