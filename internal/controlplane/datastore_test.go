package controlplane

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"

	"github.com/capk3s/capk3s/test/cpfixtures"
)

func TestNoEtcdHookOnDatastoreServers(t *testing.T) {
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1"}}
	ref := clusterv1.ContractVersionedObjectReference{}
	if m := desiredMachine(cpfixtures.OnDatastore(cpfixtures.DecisionKCP(2, nil)), cluster, "s", "", ref, ref); hasEtcdHook(m) {
		t.Errorf("a server on an external datastore has the etcd hook: %v", m.Annotations)
	}
	if m := desiredMachine(cpfixtures.DecisionKCP(3, nil), cluster, "s", "", ref, ref); !hasEtcdHook(m) {
		t.Errorf("a server on embedded etcd lacks the etcd hook: %v", m.Annotations)
	}
}

// A deleted datastore server is never held for a member handover: a hook found on
// it is released at once, and no Node is asked to leave etcd.
func TestDatastoreServersLeaveWithoutHandover(t *testing.T) {
	cluster := &clusterv1.Cluster{}
	// cpfixtures.DecisionKCP is initialized, so embedded etcd would hand the member over.
	kcp := cpfixtures.OnDatastore(cpfixtures.DecisionKCP(2, nil))
	leaving := etcdServer("a", etcdDeletedAt(1), etcdAtHook)
	seen := etcdSeen([]*clusterv1.Machine{leaving, etcdServer("b"), etcdServer("c")},
		etcdMember("a"), etcdMember("b"), etcdMember("c"))
	plan := planEtcdMembership(cluster, kcp, seen)
	if plan.remove != nil || len(plan.release) != 1 || plan.release[0].Name != "a" {
		t.Errorf("plan = release %v, remove %v; want a released and no removal", plan.release, plan.remove)
	}
}

func TestDatastoreCondition(t *testing.T) {
	machines := []*clusterv1.Machine{etcdServer("a", etcdWithoutHook), etcdServer("b", etcdWithoutHook)}
	notReady := etcdMember("b", etcdNotReady, etcdNotMember)
	for _, tc := range []struct {
		name   string
		seen   observed
		status metav1.ConditionStatus
		reason string
	}{
		{"one server Ready", etcdSeen(machines, etcdMember("a", etcdNotMember), notReady), metav1.ConditionTrue, datastoreAvailableReason},
		{"no server Ready", etcdSeen(machines, notReady), metav1.ConditionFalse, datastoreNotAvailableReason},
		{"workload cluster unreachable", observed{machines: collections.FromMachines(machines...)}, metav1.ConditionUnknown, controlplanev1.WorkloadClusterUnreachableReason},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kcp := cpfixtures.OnDatastore(cpfixtures.DecisionKCP(2, nil))
			// Left over from an earlier pass: must go.
			conditions.Set(kcp, metav1.Condition{Type: controlplanev1.EtcdClusterHealthyCondition, Status: metav1.ConditionTrue, Reason: "Healthy"})
			setDatastoreHealth(kcp, tc.seen)
			c := conditions.Get(kcp, controlplanev1.DatastoreAvailableCondition)
			if c == nil || c.Status != tc.status || c.Reason != tc.reason {
				t.Errorf("DatastoreAvailable = %+v, want %s/%s", c, tc.status, tc.reason)
			}
			if conditions.Has(kcp, controlplanev1.EtcdClusterHealthyCondition) {
				t.Error("EtcdClusterHealthy is reported for a control plane without etcd")
			}
		})
	}

	kcp := cpfixtures.DecisionKCP(3, nil)
	conditions.Set(kcp, metav1.Condition{Type: controlplanev1.DatastoreAvailableCondition, Status: metav1.ConditionTrue, Reason: "Available"})
	setDatastoreHealth(kcp, etcdSeen([]*clusterv1.Machine{etcdServer("a")}, etcdMember("a")))
	if conditions.Has(kcp, controlplanev1.DatastoreAvailableCondition) || !conditions.IsTrue(kcp, controlplanev1.EtcdClusterHealthyCondition) {
		t.Errorf("embedded etcd: conditions %+v, want EtcdClusterHealthy only", kcp.Status.Conditions)
	}
}
