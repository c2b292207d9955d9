package bootstrap

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/test/envtest"
)

// countingReconciler is a Reconciler whose requests c counts.
func countingReconciler(t *testing.T) (*Reconciler, *envtest.CountingClient) {
	t.Helper()
	c, err := env.NewCountingClient()
	if err != nil {
		t.Fatal(err)
	}
	return &Reconciler{Client: c, APIReader: env.Client}, c
}

// onePass runs one Reconcile of the config and returns its requests by verb.
func onePass(t *testing.T, r *Reconciler, c *envtest.CountingClient, config client.Object) map[string]int {
	t.Helper()
	c.Reset()
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(config)}); err != nil {
		t.Fatal(err)
	}
	return c.Counts()
}

// Every status write of a KThreesConfig wakes CAPI's Machine controller: the pass that
// renders a joining agent's data writes its status once, Paused=False included, and a
// pass with nothing new writes nothing.
func TestARenderPassWritesItsStatusInOneRequest(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newReadyCluster(t, ns)
	createToken(t, cluster)
	createCAs(t, cluster)
	markInitialized(t, cluster)
	config := newMachineWithConfig(t, cluster, "agent-0", false, bootstrapv1.KThreesConfigSpec{})
	r, c := countingReconciler(t)

	// Count the status writes until the data is reported (a few passes at most).
	passes, statusWrites := 0, 0
	var got *bootstrapv1.KThreesConfig
	for passes < 3 {
		counts := onePass(t, r, c, config)
		passes++
		statusWrites += counts[envtest.VerbPatch+"/status"]
		if counts[envtest.VerbPatch] != 0 || counts[envtest.VerbUpdate+"/status"] != 0 {
			t.Errorf("pass %d wrote the config other than by one status patch: %v", passes, counts)
		}
		if got = getConfig(t, config); ptr.Deref(got.Status.Initialization.DataSecretCreated, false) {
			break
		}
	}
	if passes != 1 || statusWrites != 1 {
		t.Errorf("rendering took %d passes and %d status writes; want 1 pass and 1 status write", passes, statusWrites)
	}
	if got.Status.DataSecretName != config.Name || got.Status.ObservedGeneration != got.Generation ||
		!conditions.IsFalse(got, clusterv1.PausedCondition) || !conditions.IsTrue(got, clusterv1.ReadyCondition) ||
		!conditions.IsTrue(got, bootstrapv1.DataSecretAvailableCondition) {
		t.Errorf("stored status: %+v", got.Status)
	}

	if counts := onePass(t, r, c, config); c.Writes() != 0 {
		t.Errorf("a pass with nothing new wrote %v", counts)
	}
}

// A config of a paused Cluster gets Paused=True and nothing else; its next pass writes
// nothing.
func TestAPausedConfigOnlyRecordsPaused(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newReadyCluster(t, ns)
	createToken(t, cluster)
	createCAs(t, cluster)
	markInitialized(t, cluster)
	cluster.Spec.Paused = ptr.To(true)
	if err := env.Client.Update(context.Background(), cluster); err != nil {
		t.Fatal(err)
	}
	config := newMachineWithConfig(t, cluster, "agent-0", false, bootstrapv1.KThreesConfigSpec{})
	r, c := countingReconciler(t)

	if counts := onePass(t, r, c, config); c.Writes() != 1 || counts[envtest.VerbPatch+"/status"] != 1 {
		t.Errorf("the first pass of a paused config wrote %v; want one status patch", counts)
	}
	got := getConfig(t, config)
	if !conditions.IsTrue(got, clusterv1.PausedCondition) || len(got.Status.Conditions) != 1 ||
		got.Status.DataSecretName != "" || got.Status.ObservedGeneration != 0 {
		t.Errorf("a paused config's status: %+v", got.Status)
	}
	if counts := onePass(t, r, c, config); c.Writes() != 0 {
		t.Errorf("the second pass of a paused config wrote %v", counts)
	}
}

// A MachinePool's config is rendered on every pass: its first pass writes its status
// once, and a pass whose rendering is unchanged writes neither the config nor its data
// Secret.
func TestAPoolConfigWritesItsStatusOnceAndIdlesWithoutWrites(t *testing.T) {
	cluster, _, _ := initializedCluster(t)
	_, config := newPoolWithConfig(t, cluster, "pool-0", nil, bootstrapv1.KThreesConfigSpec{})
	r, c := countingReconciler(t)
	if counts := onePass(t, r, c, config); counts[envtest.VerbPatch+"/status"] != 1 || counts[envtest.VerbPatch] != 0 {
		t.Errorf("the first pass of a pool's config wrote %v; want one status patch", counts)
	}
	if got := getConfig(t, config); !ptr.Deref(got.Status.Initialization.DataSecretCreated, false) ||
		!conditions.IsFalse(got, clusterv1.PausedCondition) {
		t.Fatalf("the first pass of a pool's config left %+v", got.Status)
	}
	data := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(config), data); err != nil {
		t.Fatal(err)
	}
	// Each pass still tries to create the data Secret (answered AlreadyExists).
	if counts := onePass(t, r, c, config); counts[envtest.VerbPatch+"/status"] != 0 || counts[envtest.VerbPatch] != 0 || counts[envtest.VerbUpdate] != 0 {
		t.Errorf("an unchanged pool's pass wrote %v", counts)
	}
	after := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(config), after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != data.ResourceVersion {
		t.Error("an unchanged pool's pass rewrote its data Secret")
	}
}

// The status write is guarded by the version the pass read. When the config changed
// meanwhile, the pass writes no status and is not in error: the change's event brings
// the next pass, which reports the data Secret the first one made, as it is.
func TestAStatusWriteThatConflictsIsLeftToTheNextPass(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newReadyCluster(t, ns)
	createToken(t, cluster)
	createCAs(t, cluster)
	markInitialized(t, cluster)
	config := newMachineWithConfig(t, cluster, "agent-0", false, bootstrapv1.KThreesConfigSpec{})
	inner, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	// Another writer labels the config just before the pass writes its status.
	c := interceptor.NewClient(inner, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			other := getConfig(t, config)
			other.Labels["example.com/other"] = "writer"
			if err := env.Client.Update(ctx, other); err != nil {
				return err
			}
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	})
	r := &Reconciler{Client: c, APIReader: env.Client}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(config)}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatalf("a conflicting status write is the next pass's to redo, not an error: %v", err)
	}
	if got := getConfig(t, config); len(got.Status.Conditions) != 0 || got.Status.DataSecretName != "" {
		t.Fatalf("a conflicting pass wrote status %+v", got.Status)
	}
	// The data Secret is made before any status reports it.
	made := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(config), made); err != nil {
		t.Fatalf("no data Secret after the conflicting pass: %v", err)
	}

	if _, err := (&Reconciler{Client: env.Client, APIReader: env.Client}).Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := getConfig(t, config)
	if got.Status.DataSecretName != made.Name || !ptr.Deref(got.Status.Initialization.DataSecretCreated, false) {
		t.Fatalf("the next pass did not report the data Secret: %+v", got.Status)
	}
	again := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(config), again); err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != made.ResourceVersion {
		t.Errorf("the next pass rewrote the data Secret")
	}
}
