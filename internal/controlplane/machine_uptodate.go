package controlplane

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
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
		r.machineApplies.seen(m)
		return nil
	}
	if r.machineApplies.behind(m, got) {
		// The cache has not yet shown this pass the version our last apply made; that
		// apply already stored this very condition.
		conditions.Set(m, *got)
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
	r.machineApplies.record(m, apply.GetResourceVersion(), *got)
	conditions.Set(m, *got)
	return nil
}

// conditionsEqual compares what a condition says, to the second its times are stored
// with.
func conditionsEqual(a, b metav1.Condition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message &&
		a.ObservedGeneration == b.ObservedGeneration && a.LastTransitionTime.Unix() == b.LastTransitionTime.Unix()
}

// machineApplies remembers, per Machine, the resourceVersion the last apply of its
// UpToDate condition made and the condition it stored, until the cache shows a
// version at least that new. A Machine's versions from before the apply (CAPI's
// Machine controller rewrites its status many times while it provisions) keep
// reaching passes after the apply, each without the condition; applying again from
// them would change nothing and still cost a request each.
//
// Versions are compared as the API server's resourceVersion contract allows
// (resourceversion.CompareResourceVersion); if they cannot be, nothing is skipped.
type machineApplies struct {
	mu   sync.Mutex
	last map[types.UID]appliedCondition
}

type appliedCondition struct {
	resourceVersion string
	condition       metav1.Condition
}

func newMachineApplies() *machineApplies {
	return &machineApplies{last: map[types.UID]appliedCondition{}}
}

// behind reports whether m is a version from before this process's last apply of
// want to it. A nil machineApplies knows of no apply.
func (a *machineApplies) behind(m *clusterv1.Machine, want *metav1.Condition) bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	last, ok := a.last[m.UID]
	if !ok {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(m.ResourceVersion, last.resourceVersion)
	if err != nil || cmp >= 0 {
		// The cache has caught up with the apply, or the versions cannot tell.
		delete(a.last, m.UID)
		return false
	}
	return conditionsEqual(last.condition, *want)
}

func (a *machineApplies) record(m *clusterv1.Machine, resourceVersion string, applied metav1.Condition) {
	if a == nil || resourceVersion == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last[m.UID] = appliedCondition{resourceVersion: resourceVersion, condition: applied}
}

// seen forgets m once a pass found the condition in place.
func (a *machineApplies) seen(m *clusterv1.Machine) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.last, m.UID)
}
