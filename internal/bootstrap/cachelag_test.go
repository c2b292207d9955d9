package bootstrap

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// lagging is a real client whose reads of one KThreesConfig return an older copy, as a
// cache that has not yet seen the latest write does, and that counts its creates and
// deletes.
func lagging(t *testing.T, stale *bootstrapv1.KThreesConfig) (client.Client, *int) {
	t.Helper()
	inner, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	writes := 0
	return interceptor.NewClient(inner, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if cfg, ok := obj.(*bootstrapv1.KThreesConfig); ok && key == client.ObjectKeyFromObject(stale) {
				stale.DeepCopyInto(cfg)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			writes++
			return c.Create(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			writes++
			return c.Delete(ctx, obj, opts...)
		},
	}), &writes
}

// A pass that starts from a cached config older than the API server's (it does not yet
// show the data this controller rendered) renders nothing again: it would only find
// the data Secret already there.
func TestACachedConfigBehindTheAPIServerIsNotRenderedAgain(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newInitializedCluster(t, ns)
	config := newMachineWithConfig(t, cluster, "agent-0", false, bootstrapv1.KThreesConfigSpec{})
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(config)}
	beforeRendering := getConfig(t, config)
	live := &Reconciler{Client: env.Client}
	if _, err := live.Reconcile(context.Background(), req); err != nil {
		t.Fatalf("rendering: %v", err)
	}
	rendered := getConfig(t, config)
	if !ptr.Deref(rendered.Status.Initialization.DataSecretCreated, false) {
		t.Fatalf("the first pass rendered no data: %+v", rendered.Status)
	}
	before := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: rendered.Status.DataSecretName}, before); err != nil {
		t.Fatal(err)
	}

	c, writes := lagging(t, beforeRendering)
	r := &Reconciler{Client: c, APIReader: env.Client}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatalf("a pass on a lagging cache failed: %v", err)
	}
	if *writes != 0 {
		t.Errorf("a pass on a lagging cache created or deleted %d objects; want none", *writes)
	}
	after := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(before), after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the data Secret was written again")
	}
}

// Joining configs of an initialized cluster release its init lock once per process,
// not on every pass.
func TestTheInitLockIsReleasedOncePerCluster(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newInitializedCluster(t, ns)
	stale := &bootstrapv1.KThreesConfig{}
	c, writes := lagging(t, stale) // no config is stale here: only the counting matters
	r := &Reconciler{Client: c, APIReader: env.Client}
	for _, name := range []string{"agent-0", "agent-1", "agent-2"} {
		config := newMachineWithConfig(t, cluster, name, false, bootstrapv1.KThreesConfigSpec{})
		req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(config)}
		for range 2 {
			if _, err := r.Reconcile(context.Background(), req); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if !ptr.Deref(getConfig(t, config).Status.Initialization.DataSecretCreated, false) {
			t.Fatalf("%s rendered no data", name)
		}
	}
	// Three data Secrets created, and one init lock release.
	if *writes != 4 {
		t.Errorf("three joining configs made %d creates and deletes; want 3 data Secrets and 1 init lock release", *writes)
	}
}
