package controlplane

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// machineConditionOwner is the field manager under which the control plane applies
// the conditions it owns on its Machines.
const machineConditionOwner = "capk3s-kthreescontrolplane"

// applyMachineUpToDate stores want as m's UpToDate condition when m (as this pass read
// it) shows another, and writes nothing otherwise.
//
// It is a server-side apply of that one condition: a Machine's conditions are a list
// keyed by type, so the apply changes only the entry this field manager owns, and needs
// no resourceVersion. CAPI's Machine controller rewrites the same Machine's status many
// times while it provisions; a patch guarded by the resourceVersion the pass read (CAPI's
// patch helper) met a conflict and a retry on most of those passes (docs/performance.md).
func (r *Reconciler) applyMachineUpToDate(ctx context.Context, m *clusterv1.Machine, want metav1.Condition) error {
	current := m.DeepCopy()
	conditions.Set(current, want)
	got := conditions.Get(current, want.Type)
	if have := conditions.Get(m, want.Type); have != nil && conditionsEqual(*have, *got) {
		return nil
	}
	cond, err := runtime.DefaultUnstructuredConverter.ToUnstructured(got)
	if err != nil {
		return fmt.Errorf("condition %s of Machine %s: %w", want.Type, m.Name, err)
	}
	apply := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": clusterv1.GroupVersion.String(),
		"kind":       "Machine",
		"metadata":   map[string]any{"name": m.Name, "namespace": m.Namespace},
		"status":     map[string]any{"conditions": []any{cond}},
	}}
	if err := r.Client.Status().Patch(ctx, apply, client.Apply, client.FieldOwner(machineConditionOwner), client.ForceOwnership); err != nil { //nolint:staticcheck // client.Apply on a subresource is how controller-runtime v0.24 applies status
		return fmt.Errorf("applying condition %s of Machine %s: %w", want.Type, m.Name, err)
	}
	conditions.Set(m, *got)
	return nil
}

// conditionsEqual compares what a condition says, to the second its times are stored
// with.
func conditionsEqual(a, b metav1.Condition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message &&
		a.ObservedGeneration == b.ObservedGeneration && a.LastTransitionTime.Unix() == b.LastTransitionTime.Unix()
}
