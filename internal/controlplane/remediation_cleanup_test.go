package controlplane

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	v1beta1conditions "sigs.k8s.io/cluster-api/util/conditions/deprecated/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/controlplane/serverplan"

	"github.com/capk3s/capk3s/test/cpfixtures"
)

// markRecovered sets what a MachineHealthCheck leaves on a server that recovered
// before its owner remediated it: HealthCheckSucceeded True again, OwnerRemediated
// still False (the health check leaves that condition to the owner), in both the
// v1beta2 and the deprecated v1beta1 conditions.
func markRecovered(m *clusterv1.Machine) {
	cpfixtures.MarkUnhealthy(m)
	conditions.Set(m, metav1.Condition{Type: clusterv1.MachineHealthCheckSucceededCondition,
		Status: metav1.ConditionTrue, Reason: clusterv1.MachineHealthCheckSucceededReason})
	v1beta1conditions.MarkTrue(m, clusterv1.MachineHealthCheckSucceededV1Beta1Condition)
	v1beta1conditions.MarkFalse(m, clusterv1.MachineOwnerRemediatedV1Beta1Condition,
		clusterv1.WaitingForRemediationV1Beta1Reason, clusterv1.ConditionSeverityWarning, "")
}

// A server that recovered before it was remediated must not go on saying it waits
// for remediation: the owner drops OwnerRemediated, as KubeadmControlPlane does.
func TestReconcileRemediationClearsRecoveredServers(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster, kcp, nodes := threeServerControlPlane(t, ns)
	s2 := &clusterv1.Machine{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "s2"}, s2); err != nil {
		t.Fatal(err)
	}
	markRecovered(s2)
	if err := env.Client.Status().Update(ctx, s2); err != nil {
		t.Fatal(err)
	}

	r := &Reconciler{Client: env.Client}
	machines, err := r.controlPlaneMachines(ctx, cluster, kcp)
	if err != nil {
		t.Fatal(err)
	}
	kcp.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	done, _, err := r.reconcileRemediation(ctx, cluster, kcp, &observed{machines: machines, nodes: nodes})
	if err != nil || done {
		t.Fatalf("reconcileRemediation = %v, %v; want no error, not done", done, err)
	}
	if c := conditions.Get(kcp, remediatingCondition); c == nil || c.Reason != serverplan.NotRemediatingReason {
		t.Errorf("Remediating = %+v, want %s", c, serverplan.NotRemediatingReason)
	}

	got := &clusterv1.Machine{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "s2"}, got); err != nil {
		t.Fatal(err)
	}
	if c := conditions.Get(got, clusterv1.MachineOwnerRemediatedCondition); c != nil {
		t.Errorf("recovered server still has OwnerRemediated %s/%s", c.Status, c.Reason)
	}
	if v1beta1conditions.Has(got, clusterv1.MachineOwnerRemediatedV1Beta1Condition) {
		t.Error("recovered server still has the v1beta1 OwnerRemediated condition")
	}
	if !conditions.IsTrue(got, clusterv1.MachineHealthCheckSucceededCondition) {
		t.Error("the health check's own condition was touched")
	}
}

func TestRecoveredBeforeRemediation(t *testing.T) {
	recovered := func() *clusterv1.Machine {
		m := &clusterv1.Machine{}
		markRecovered(m)
		return m
	}
	tests := []struct {
		name                 string
		machine              func() *clusterv1.Machine
		wantCurrent, wantOld bool
	}{
		{name: "recovered", machine: recovered, wantCurrent: true, wantOld: true},
		{name: "still unhealthy: the owner's to remediate", machine: func() *clusterv1.Machine {
			m := &clusterv1.Machine{}
			cpfixtures.MarkUnhealthy(m)
			v1beta1conditions.MarkFalse(m, clusterv1.MachineHealthCheckSucceededV1Beta1Condition, "NodeNotFound", clusterv1.ConditionSeverityWarning, "")
			v1beta1conditions.MarkFalse(m, clusterv1.MachineOwnerRemediatedV1Beta1Condition, clusterv1.WaitingForRemediationV1Beta1Reason, clusterv1.ConditionSeverityWarning, "")
			return m
		}},
		{name: "never marked", machine: func() *clusterv1.Machine {
			m := &clusterv1.Machine{}
			conditions.Set(m, metav1.Condition{Type: clusterv1.MachineHealthCheckSucceededCondition, Status: metav1.ConditionTrue, Reason: clusterv1.MachineHealthCheckSucceededReason})
			return m
		}},
		{name: "being deleted: its remediation is under way", machine: func() *clusterv1.Machine {
			m := recovered()
			m.DeletionTimestamp = ptr.To(metav1.Now())
			return m
		}},
		{name: "remediated: OwnerRemediated True is no request", machine: func() *clusterv1.Machine {
			m := recovered()
			conditions.Set(m, metav1.Condition{Type: clusterv1.MachineOwnerRemediatedCondition, Status: metav1.ConditionTrue, Reason: "Remediated"})
			v1beta1conditions.MarkTrue(m, clusterv1.MachineOwnerRemediatedV1Beta1Condition)
			return m
		}},
		{name: "only the v1beta1 conditions say so", machine: func() *clusterv1.Machine {
			m := recovered()
			conditions.Delete(m, clusterv1.MachineOwnerRemediatedCondition)
			return m
		}, wantOld: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current, old := recoveredBeforeRemediation(tt.machine())
			if current != tt.wantCurrent || old != tt.wantOld {
				t.Errorf("recoveredBeforeRemediation = %v, %v; want %v, %v", current, old, tt.wantCurrent, tt.wantOld)
			}
		})
	}
}
