package runtimehooks

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
)

func TestPendingHooks(t *testing.T) {
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		runtimev1.PendingHooksAnnotation: " AfterClusterUpgrade, ,UpdateMachines",
	}}}
	if IsPending(runtimehooksv1.UpdateMachine, m) {
		t.Error("UpdateMachine pending, but only UpdateMachines is listed")
	}
	MarkPending(runtimehooksv1.UpdateMachine, m)
	MarkPending(runtimehooksv1.UpdateMachine, m)
	if got, want := PendingHooks(m), []string{"AfterClusterUpgrade", "UpdateMachines", "UpdateMachine"}; !slices.Equal(got, want) {
		t.Errorf("pending hooks %v, want %v (the others kept, UpdateMachine once)", got, want)
	}
	if !IsPending(runtimehooksv1.UpdateMachine, m) {
		t.Error("UpdateMachine not pending after MarkPending")
	}
	empty := &clusterv1.Machine{}
	MarkPending(runtimehooksv1.UpdateMachine, empty)
	if empty.Annotations[runtimev1.PendingHooksAnnotation] != "UpdateMachine" {
		t.Errorf("annotations %v, want UpdateMachine pending", empty.Annotations)
	}
}
