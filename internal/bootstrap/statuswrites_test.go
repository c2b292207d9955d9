package bootstrap

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

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
	cluster := newInitializedCluster(t, ns)
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
	cluster := newInitializedCluster(t, ns)
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
	// Each pass reads the data Secret and leaves it as it is.
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

// labelledBeforeStatusWrite is a client that, like CAPI's Machine and MachineSet
// controllers writing a new config's metadata (owner references, labels) while its
// first passes run, labels the config just before the pass's first status write. It
// records every answer 409 Conflict or AlreadyExists, and whether it labelled.
type labelledBeforeStatusWrite struct {
	client.Client
	answered409 []string
	labelled    bool
}

func newLabelledBeforeStatusWrite(t *testing.T, config *bootstrapv1.KThreesConfig) *labelledBeforeStatusWrite {
	t.Helper()
	inner, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w := &labelledBeforeStatusWrite{}
	count409 := func(what string, err error) error {
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			w.answered409 = append(w.answered409, what+": "+err.Error())
		}
		return err
	}
	w.Client = interceptor.NewClient(inner, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return count409("create "+obj.GetName(), c.Create(ctx, obj, opts...))
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if _, ok := obj.(*bootstrapv1.KThreesConfig); ok && !w.labelled {
				w.labelled = true
				other := getConfig(t, config)
				other.Labels["example.com/other"] = "writer"
				if err := env.Client.Update(ctx, other); err != nil {
					return err
				}
			}
			return count409("patch "+sub+" "+obj.GetName(), c.SubResource(sub).Patch(ctx, obj, p, opts...))
		},
	})
	return w
}

// The pass that renders a Machine's data from a copy it checked was current still
// records the data Secret when another writer changed the config between that check
// and the status write: its status is this controller's alone, so the write needs no
// guard, and a guarded one would be answered 409 and leave the next pass to render
// again, only to be answered AlreadyExists on the Secret. Neither pass meets a 409,
// and the data is made once.
func TestARenderingPassRecordsItsDataWhenTheConfigChangedMeanwhile(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newInitializedCluster(t, ns)
	config := newMachineWithConfig(t, cluster, "agent-0", false, bootstrapv1.KThreesConfigSpec{})
	c := newLabelledBeforeStatusWrite(t, config)
	r := &Reconciler{Client: c, APIReader: env.Client}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(config)}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if !c.labelled {
		t.Fatal("the pass wrote no status; the test needs one")
	}
	got := getConfig(t, config)
	if got.Status.DataSecretName != config.Name || !ptr.Deref(got.Status.Initialization.DataSecretCreated, false) ||
		!conditions.IsTrue(got, bootstrapv1.DataSecretAvailableCondition) || got.Labels["example.com/other"] != "writer" {
		t.Fatalf("after the rendering pass: labels %v, status %+v", got.Labels, got.Status)
	}
	made := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(config), made); err != nil {
		t.Fatalf("no data Secret after the rendering pass: %v", err)
	}

	// The other writer's event brings another pass: it finds the data recorded.
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if len(c.answered409) != 0 {
		t.Errorf("the passes were answered 409: %v", c.answered409)
	}
	again := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(config), again); err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != made.ResourceVersion {
		t.Errorf("the next pass rewrote the data Secret")
	}
}

// A pass that cannot render yet records why, from a copy it checked was current, even
// when CAPI labelled the config meanwhile: at 100 clusters such guarded writes were
// answered 409 (8 in one provisioning run), each a wasted request and a pass that left
// the reason unrecorded until the next event.
func TestAWaitingPassRecordsWhyWhenTheConfigChangedMeanwhile(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newReadyCluster(t, ns)
	createToken(t, cluster)
	createCAs(t, cluster)
	config := newMachineWithConfig(t, cluster, "agent-0", false, bootstrapv1.KThreesConfigSpec{})
	c := newLabelledBeforeStatusWrite(t, config)
	r := &Reconciler{Client: c, APIReader: env.Client}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(config)}); err != nil {
		t.Fatal(err)
	}
	if !c.labelled {
		t.Fatal("the pass wrote no status; the test needs one")
	}
	if len(c.answered409) != 0 {
		t.Errorf("the pass was answered 409: %v", c.answered409)
	}
	got := getConfig(t, config)
	if reason := conditions.GetReason(got, bootstrapv1.DataSecretAvailableCondition); reason != bootstrapv1.WaitingForControlPlaneInitializationReason ||
		got.Labels["example.com/other"] != "writer" || got.Status.ObservedGeneration != got.Generation {
		t.Fatalf("after the waiting pass: labels %v, DataSecretAvailable reason %q, status %+v", got.Labels, reason, got.Status)
	}
}
