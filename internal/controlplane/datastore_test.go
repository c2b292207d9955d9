package controlplane

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

func onDatastore(kcp *controlplanev1.KThreesControlPlane) *controlplanev1.KThreesControlPlane {
	kcp.Spec.KThreesConfigSpec.ServerConfig.Datastore = &bootstrapv1.Datastore{
		EndpointSecret: bootstrapv1.SecretKeyReference{Name: "pg", Key: "endpoint"},
	}
	return kcp
}

func TestNoEtcdHookOnDatastoreServers(t *testing.T) {
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1"}}
	ref := clusterv1.ContractVersionedObjectReference{}
	if m := desiredMachine(onDatastore(decisionKCP(2, nil)), cluster, "s", "", ref, ref); hasEtcdHook(m) {
		t.Errorf("a server on an external datastore has the etcd hook: %v", m.Annotations)
	}
	if m := desiredMachine(decisionKCP(3, nil), cluster, "s", "", ref, ref); !hasEtcdHook(m) {
		t.Errorf("a server on embedded etcd lacks the etcd hook: %v", m.Annotations)
	}
}

// A deleted datastore server is never held for a member handover: a hook found on
// it is released at once, and no Node is asked to leave etcd.
func TestDatastoreServersLeaveWithoutHandover(t *testing.T) {
	cluster := &clusterv1.Cluster{}
	// decisionKCP is initialized, so embedded etcd would hand the member over.
	kcp := onDatastore(decisionKCP(2, nil))
	leaving := etcdServer("a", etcdDeletedAt(1), etcdAtHook)
	seen := etcdSeen([]*clusterv1.Machine{leaving, etcdServer("b"), etcdServer("c")},
		etcdMember("a"), etcdMember("b"), etcdMember("c"))
	plan := planEtcdMembership(cluster, kcp, seen)
	if plan.remove != nil || len(plan.release) != 1 || plan.release[0].Name != "a" {
		t.Errorf("plan = release %v, remove %v; want a released and no removal", plan.release, plan.remove)
	}
}

func TestNextStepOnDatastore(t *testing.T) {
	zero := 0
	fresh := func(name string) *clusterv1.Machine { return decisionMachine(name, time.Hour) }
	old := func(name string) *clusterv1.Machine {
		return decisionMachine(name, time.Hour, withVersion("v1.30.8+k3s1"))
	}
	for _, tc := range []struct {
		name        string
		kcp         *controlplanev1.KThreesControlPlane
		machines    []*clusterv1.Machine
		want        scaleStep
		wantBlocked string
	}{
		{"scale 2 to 1", onDatastore(decisionKCP(1, nil)), []*clusterv1.Machine{fresh("a"), fresh("b")}, stepScaleDown, ""},
		{"maxSurge 0 with 2 servers: no quorum to keep", onDatastore(decisionKCP(2, &zero)), []*clusterv1.Machine{old("a"), fresh("b")}, stepScaleDown, ""},
		{"maxSurge 0 with 1 server keeps the API up", onDatastore(decisionKCP(1, &zero)), []*clusterv1.Machine{old("a")}, stepNone, "without an API server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names := []string{}
			for _, m := range tc.machines {
				names = append(names, m.Name)
			}
			seen := observed{machines: collections.FromMachines(tc.machines...), nodes: readyNodes(names...)}
			got, blocked := nextStep(tc.kcp, seen, seen.outdated(tc.kcp, t0), true)
			if got != tc.want || !strings.Contains(blocked, tc.wantBlocked) || (tc.wantBlocked == "") != (blocked == "") {
				t.Errorf("nextStep = %v, %q; want %v, %q", got, blocked, tc.want, tc.wantBlocked)
			}
		})
	}
}

// 3 servers, 2 unhealthy: embedded etcd refuses to remediate (1 healthy of 2 left, no
// quorum); on an external datastore the data is safe and the server is replaced.
func TestRemediationOnDatastoreHasNoQuorumRule(t *testing.T) {
	servers := []remServer{
		{name: "a", age: 3 * time.Hour, unhealthy: true},
		{name: "b", age: 2 * time.Hour, unhealthy: true, ready: true},
		{name: "c", age: time.Hour, ready: true},
	}
	machines, nodes := observe(t, servers)
	if d := decideRemediation(remediationKCP(true, 3, nil), machines, nodes, remediationNow); d.reason != remediationWouldLoseQuorumReason {
		t.Fatalf("embedded etcd: reason %q, want %q", d.reason, remediationWouldLoseQuorumReason)
	}
	d := decideRemediation(onDatastore(remediationKCP(true, 3, nil)), machines, nodes, remediationNow)
	if d.victim == nil || d.victim.Name != "a" || d.reason != remediatingReason {
		t.Errorf("datastore: victim %v, reason %q (%s); want a remediated", d.victim, d.reason, d.message)
	}
	if got := replacementPreflight(machines, nodes, true); got != "" {
		t.Errorf("replacementPreflight on a datastore = %q, want no quorum block", got)
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
			kcp := onDatastore(decisionKCP(2, nil))
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

	kcp := decisionKCP(3, nil)
	conditions.Set(kcp, metav1.Condition{Type: controlplanev1.DatastoreAvailableCondition, Status: metav1.ConditionTrue, Reason: "Available"})
	setDatastoreHealth(kcp, etcdSeen([]*clusterv1.Machine{etcdServer("a")}, etcdMember("a")))
	if conditions.Has(kcp, controlplanev1.DatastoreAvailableCondition) || !conditions.IsTrue(kcp, controlplanev1.EtcdClusterHealthyCondition) {
		t.Errorf("embedded etcd: conditions %+v, want EtcdClusterHealthy only", kcp.Status.Conditions)
	}
}
