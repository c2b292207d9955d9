package cpfixtures

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
)

// T0 is the instant of the scaling and rollout tests: servers' ages count back
// from it.
var T0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ServerMachine is a server Machine (it carries CAPI's control-plane label) with
// nothing else to it.
func ServerMachine(name string) *clusterv1.Machine {
	return &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{clusterv1.MachineControlPlaneLabel: ""}}}
}

// MachineOpt changes one thing about a Machine DecisionMachine builds.
type MachineOpt func(*clusterv1.Machine)

// DecisionMachine is a server Machine of DecisionKCP's version, created age before T0.
func DecisionMachine(name string, age time.Duration, opts ...MachineOpt) *clusterv1.Machine {
	m := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(T0.Add(-age))},
		Spec:       clusterv1.MachineSpec{Version: "1.31.4+k3s1"},
	}
	for _, o := range opts {
		o(m)
	}
	return m
}

// WithVersion gives the Machine another Kubernetes version.
func WithVersion(v string) MachineOpt { return func(m *clusterv1.Machine) { m.Spec.Version = v } }

// InFD places the Machine in failure domain fd.
func InFD(fd string) MachineOpt { return func(m *clusterv1.Machine) { m.Spec.FailureDomain = fd } }

// MarkedForDeletion carries CAPI's delete-machine annotation, which a user sets to
// choose the next server a scale-down removes.
func MarkedForDeletion() MachineOpt {
	return func(m *clusterv1.Machine) {
		m.Annotations = map[string]string{clusterv1.DeleteMachineAnnotation: ""}
	}
}

// BeingDeleted gives the Machine a deletion timestamp (at T0).
func BeingDeleted() MachineOpt {
	return func(m *clusterv1.Machine) { m.DeletionTimestamp = ptr.To(metav1.NewTime(T0)) }
}

// MarkUnhealthy sets the conditions a MachineHealthCheck sets on a server it hands to
// its owner for remediation.
func MarkUnhealthy(m *clusterv1.Machine) {
	conditions.Set(m, metav1.Condition{Type: clusterv1.MachineHealthCheckSucceededCondition,
		Status: metav1.ConditionFalse, Reason: clusterv1.MachineHealthCheckNodeDeletedReason})
	conditions.Set(m, metav1.Condition{Type: clusterv1.MachineOwnerRemediatedCondition,
		Status: metav1.ConditionFalse, Reason: clusterv1.MachineOwnerRemediatedWaitingForRemediationReason})
}

// InfraClonedFrom is an infrastructure machine whose annotations say which template
// it was cloned from, as CAPI records it.
func InfraClonedFrom(groupKind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAnnotations(map[string]string{
		clusterv1.TemplateClonedFromGroupKindAnnotation: groupKind,
		clusterv1.TemplateClonedFromNameAnnotation:      name,
	})
	return u
}
