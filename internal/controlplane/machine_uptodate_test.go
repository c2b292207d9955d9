package controlplane

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/test/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// statusPatches is a real client that counts status patches and their 409 answers.
// Just before its first status patch, another writer (CAPI's Machine controller, say)
// changes the Machine's status, as happens all the time while a Machine provisions.
func statusPatches(t *testing.T) (client.Client, *int, *int) {
	t.Helper()
	inner, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var patches, conflicts int
	return interceptor.NewClient(inner, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			patches++
			if patches == 1 {
				otherWriterChanges(ctx, t, client.ObjectKeyFromObject(obj))
			}
			err := c.SubResource(sub).Patch(ctx, obj, p, opts...)
			if apierrors.IsConflict(err) {
				conflicts++
			}
			return err
		},
	}), &patches, &conflicts
}

// otherWriterChanges sets a condition of its own on the Machine, as CAPI's Machine
// controller does.
func otherWriterChanges(ctx context.Context, t *testing.T, key client.ObjectKey) {
	t.Helper()
	m := &clusterv1.Machine{}
	if err := env.Client.Get(ctx, key, m); err != nil {
		t.Fatal(err)
	}
	conditions.Set(m, metav1.Condition{Type: clusterv1.MachineNodeHealthyCondition, Status: metav1.ConditionFalse, Reason: "NodeNotReady", Message: "* waiting"})
	if err := env.Client.Status().Update(ctx, m); err != nil {
		t.Fatal(err)
	}
}

// The control plane sets its servers' UpToDate condition from a copy of the Machine
// that CAPI's Machine controller has since written over: the write neither conflicts
// nor drops that controller's conditions, and once the condition is there, nothing is
// written. CAPI's patch helper, used before, meets a conflict in the same situation.
func TestMachineUpToDateIsWrittenWithoutConflictFromAStaleCopy(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	newMachine := func(name string) (stale *clusterv1.Machine) {
		m := &clusterv1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: clusterv1.MachineSpec{
				ClusterName: "c1", Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To(name)},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineKind, Name: name,
				},
			},
		}
		if err := env.Client.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
		stale = m.DeepCopy()
		// CAPI's Machine controller writes its own condition after the copy was read.
		m.Status.Conditions = []metav1.Condition{{Type: clusterv1.MachineReadyCondition, Status: metav1.ConditionFalse,
			Reason: "NotReady", Message: "* waiting", LastTransitionTime: metav1.Now()}}
		if err := env.Client.Status().Update(ctx, m); err != nil {
			t.Fatal(err)
		}
		return stale
	}
	want := machineUpToDate("")

	// Before: CAPI's patch helper from the stale copy.
	c, _, conflicts := statusPatches(t)
	stale := newMachine("helper")
	helper, err := patch.NewHelper(stale, c)
	if err != nil {
		t.Fatal(err)
	}
	conditions.Set(stale, want)
	if err := helper.Patch(ctx, stale, patch.WithOwnedConditions{Conditions: []string{want.Type}}); err != nil {
		t.Fatal(err)
	}
	if *conflicts == 0 {
		t.Fatal("CAPI's patch helper met no conflict from the stale copy: the situation this test is about did not arise")
	}

	// Now: the condition applied.
	c, patches, conflicts := statusPatches(t)
	r := &Reconciler{Client: c}
	stale = newMachine("apply")
	if err := r.applyMachineUpToDate(ctx, stale, want); err != nil {
		t.Fatal(err)
	}
	if *conflicts != 0 || *patches != 1 {
		t.Errorf("applying UpToDate from a stale copy made %d status patches and met %d conflicts; want 1 and none", *patches, *conflicts)
	}
	stored := &clusterv1.Machine{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(stale), stored); err != nil {
		t.Fatal(err)
	}
	if !conditions.IsTrue(stored, clusterv1.MachineUpToDateCondition) || !conditions.Has(stored, clusterv1.MachineReadyCondition) ||
		!conditions.Has(stored, clusterv1.MachineNodeHealthyCondition) {
		t.Errorf("stored conditions %+v; want UpToDate True beside the Machine controller's Ready and NodeHealthy", stored.Status.Conditions)
	}
	*patches = 0
	if err := r.applyMachineUpToDate(ctx, stored, want); err != nil {
		t.Fatal(err)
	}
	if *patches != 0 {
		t.Errorf("a Machine already UpToDate got %d status patches; want none", *patches)
	}
}

// Under load the cache hands a pass older versions of a Machine than the one the last
// apply made: CAPI's Machine controller wrote them before the apply, and their events
// are still on their way. Such a copy lacks the condition, yet applying it again would
// change nothing; it is not sent. A newer version without the condition (another
// writer removed it) gets it back.
func TestMachineUpToDateIsNotAppliedAgainFromACopyOlderThanTheApply(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	m := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m"},
		Spec: clusterv1.MachineSpec{
			ClusterName: "c1", Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To("m")},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineKind, Name: "m",
			},
		},
	}
	if err := env.Client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	created := m.DeepCopy()
	otherWriterChanges(ctx, t, client.ObjectKeyFromObject(m))
	written := &clusterv1.Machine{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(m), written); err != nil {
		t.Fatal(err)
	}

	var patches int
	inner, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := interceptor.NewClient(inner, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			patches++
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	})
	r := &Reconciler{Client: c, machineApplies: newMachineApplies()}
	want := machineUpToDate("")

	// A pass reads the newest version and applies.
	if err := r.applyMachineUpToDate(ctx, written.DeepCopy(), want); err != nil {
		t.Fatal(err)
	}
	if patches != 1 {
		t.Fatalf("the first apply sent %d status patches, want 1", patches)
	}
	// The next passes read the versions from before the apply, in the order the cache
	// delivers them: nothing is sent, and the pass's copy shows the condition.
	for _, old := range []*clusterv1.Machine{created, written} {
		patches = 0
		copied := old.DeepCopy()
		if err := r.applyMachineUpToDate(ctx, copied, want); err != nil {
			t.Fatal(err)
		}
		if patches != 0 {
			t.Errorf("a copy at resourceVersion %s, older than the apply, led to %d status patches; want none", old.ResourceVersion, patches)
		}
		if !conditions.IsTrue(copied, clusterv1.MachineUpToDateCondition) {
			t.Errorf("the pass's copy does not show the applied condition: %+v", copied.Status.Conditions)
		}
	}

	// Another writer drops the condition: the newer version gets it again.
	stored := &clusterv1.Machine{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(m), stored); err != nil {
		t.Fatal(err)
	}
	conditions.Delete(stored, clusterv1.MachineUpToDateCondition)
	if err := env.Client.Status().Update(ctx, stored); err != nil {
		t.Fatal(err)
	}
	patches = 0
	if err := r.applyMachineUpToDate(ctx, stored, want); err != nil {
		t.Fatal(err)
	}
	if patches != 1 {
		t.Errorf("a newer version without the condition led to %d status patches; want 1", patches)
	}
}
