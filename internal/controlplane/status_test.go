package controlplane

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/workload"

	"github.com/capk3s/capk3s/test/cpfixtures"
)

// withMachineCondition gives a Machine a condition as CAPI's Machine controller (or
// this controller, for UpToDate) would have set it.
func withMachineCondition(t string, status metav1.ConditionStatus) cpfixtures.MachineOpt {
	return func(m *clusterv1.Machine) {
		conditions.Set(m, metav1.Condition{Type: t, Status: status, Reason: "Test"})
	}
}

func statusCluster() *clusterv1.Cluster {
	return &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
}

func tokenAvailable(kcp *controlplanev1.KThreesControlPlane) *controlplanev1.KThreesControlPlane {
	conditions.Set(kcp, metav1.Condition{Type: controlplanev1.TokenAvailableCondition, Status: metav1.ConditionTrue, Reason: controlplanev1.TokenAvailableReason})
	return kcp
}

// The counters are the Machines' own conditions, not the Nodes: a Machine whose Ready
// is Unknown (its Node is Ready, but a readiness gate has not reported) is not ready,
// and a Ready Machine still inside minReadySeconds is not available.
func TestStatusCountsMachineConditions(t *testing.T) {
	ready := withMachineCondition(clusterv1.MachineReadyCondition, metav1.ConditionTrue)
	available := withMachineCondition(clusterv1.MachineAvailableCondition, metav1.ConditionTrue)
	upToDate := withMachineCondition(clusterv1.MachineUpToDateCondition, metav1.ConditionTrue)
	machines := []*clusterv1.Machine{
		cpfixtures.DecisionMachine("a", time.Hour, ready, available, upToDate),
		cpfixtures.DecisionMachine("b", time.Hour, ready, withMachineCondition(clusterv1.MachineAvailableCondition, metav1.ConditionFalse), upToDate),
		cpfixtures.DecisionMachine("c", time.Hour, withMachineCondition(clusterv1.MachineReadyCondition, metav1.ConditionUnknown),
			withMachineCondition(clusterv1.MachineUpToDateCondition, metav1.ConditionFalse)),
	}
	// Every Node is Ready: only the Machines' conditions may tell them apart.
	seen := etcdSeen(machines, etcdMember("a"), etcdMember("b"), etcdMember("c"))
	kcp := tokenAvailable(cpfixtures.DecisionKCP(3, nil))

	setStatus(statusCluster(), kcp, seen)

	st := kcp.Status
	if got := [4]int32{ptr.Deref(st.Replicas, -1), ptr.Deref(st.ReadyReplicas, -1), ptr.Deref(st.AvailableReplicas, -1), ptr.Deref(st.UpToDateReplicas, -1)}; got != [4]int32{3, 2, 1, 2} {
		t.Errorf("replicas/ready/available/upToDate = %v, want [3 2 1 2]", got)
	}
	if c := conditions.Get(kcp, controlplanev1.MachinesReadyCondition); c == nil || c.Status != metav1.ConditionUnknown || c.Reason != controlplanev1.ReadyUnknownReason {
		t.Errorf("MachinesReady = %+v, want Unknown/%s (one Machine's Ready is Unknown)", c, controlplanev1.ReadyUnknownReason)
	}
	if c := conditions.Get(kcp, controlplanev1.MachinesUpToDateCondition); c == nil || c.Status != metav1.ConditionFalse || c.Reason != controlplanev1.NotUpToDateReason {
		t.Errorf("MachinesUpToDate = %+v, want False/%s", c, controlplanev1.NotUpToDateReason)
	}
	if !conditions.IsTrue(kcp, controlplanev1.AvailableCondition) {
		t.Errorf("Available = %+v, want True: every etcd member is healthy", conditions.Get(kcp, controlplanev1.AvailableCondition))
	}
}

// A workload cluster that cannot be reached says nothing about the servers: the
// counters stay as the Machines say, and Available and the etcd health are Unknown
// with a reason that says why, not False (which CAPI would copy into the Cluster).
func TestStatusWhenTheWorkloadClusterIsUnreachable(t *testing.T) {
	ready := withMachineCondition(clusterv1.MachineReadyCondition, metav1.ConditionTrue)
	machines := []*clusterv1.Machine{cpfixtures.DecisionMachine("a", time.Hour, ready), cpfixtures.DecisionMachine("b", time.Hour, ready), cpfixtures.DecisionMachine("c", time.Hour, ready)}
	seen := observed{machines: collections.FromMachines(machines...)} // nodes nil: not read
	kcp := tokenAvailable(cpfixtures.DecisionKCP(3, nil))

	setStatus(statusCluster(), kcp, seen)
	setDatastoreHealth(kcp, seen)

	if got := ptr.Deref(kcp.Status.ReadyReplicas, -1); got != 3 {
		t.Errorf("readyReplicas = %d, want 3 as the Machines say", got)
	}
	for _, ct := range []string{controlplanev1.AvailableCondition, controlplanev1.EtcdClusterHealthyCondition} {
		c := conditions.Get(kcp, ct)
		if c == nil || c.Status != metav1.ConditionUnknown || c.Reason != controlplanev1.WorkloadClusterUnreachableReason {
			t.Errorf("%s = %+v, want Unknown/%s", ct, c, controlplanev1.WorkloadClusterUnreachableReason)
		}
	}
	if !conditions.IsTrue(kcp, controlplanev1.MachinesReadyCondition) {
		t.Errorf("MachinesReady = %+v, want True as the Machines say", conditions.Get(kcp, controlplanev1.MachinesReadyCondition))
	}

	// Not initialized: that is a fact, whatever the connection.
	kcp = tokenAvailable(cpfixtures.DecisionKCP(3, nil))
	kcp.Status.Initialization.ControlPlaneInitialized = nil
	setStatus(statusCluster(), kcp, seen)
	if c := conditions.Get(kcp, controlplanev1.AvailableCondition); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Available before initialization = %+v, want False", c)
	}
}

// Available asks for a quorum of healthy etcd members, as the Nodes show them; a
// server without a Node yet (a learner) does not count against it.
func TestAvailableNeedsAnEtcdQuorum(t *testing.T) {
	machines := []*clusterv1.Machine{etcdServer("a"), etcdServer("b"), etcdServer("c"), etcdServer("d")}
	for _, tc := range []struct {
		name string
		seen observed
		want metav1.ConditionStatus
	}{
		{"all healthy", etcdSeen(machines[:3], etcdMember("a"), etcdMember("b"), etcdMember("c")), metav1.ConditionTrue},
		{"two of three", etcdSeen(machines[:3], etcdMember("a"), etcdMember("b"), etcdMember("c", etcdNotReady)), metav1.ConditionTrue},
		{"one of three", etcdSeen(machines[:3], etcdMember("a"), etcdMember("b", etcdNotReady), etcdMember("c", etcdNotReady)), metav1.ConditionFalse},
		{"joining server without a Node", etcdSeen(machines[:2], etcdMember("a")), metav1.ConditionTrue},
		{"removal asked counts as unhealthy", etcdSeen(machines[:3], etcdMember("a"), etcdMember("b", etcdAsked), etcdMember("c", etcdNotReady)), metav1.ConditionFalse},
		{"removed member leaves the count", etcdSeen(machines, etcdMember("a"), etcdMember("b"), etcdMember("c", etcdRemoved), etcdMember("d", etcdRemoved)), metav1.ConditionTrue},
		{"a member removed by k3s (remove annotation consumed) is no healthy voter",
			etcdSeen(machines[:3], etcdMember("a"), etcdMember("b", etcdRemovedConsumed), etcdMember("c", etcdNotReady)), metav1.ConditionFalse},
		{"no member at all", etcdSeen(machines[:1], etcdMember("a", etcdNotMember)), metav1.ConditionFalse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kcp := tokenAvailable(cpfixtures.DecisionKCP(3, nil))
			setAvailable(kcp, tc.seen)
			if c := conditions.Get(kcp, controlplanev1.AvailableCondition); c == nil || c.Status != tc.want {
				t.Errorf("Available = %+v, want %s", c, tc.want)
			}
		})
	}
}

func TestVersionsOf(t *testing.T) {
	node := func(v string) cpfixtures.MachineOpt {
		return func(m *clusterv1.Machine) { m.Status.NodeInfo = &corev1.NodeSystemInfo{KubeletVersion: v} }
	}
	machines := collections.FromMachines(
		cpfixtures.DecisionMachine("a", time.Hour, cpfixtures.WithVersion("v1.31.4+k3s2")),
		cpfixtures.DecisionMachine("b", time.Hour, cpfixtures.WithVersion("v1.31.4+k3s2"), node("v1.31.4+k3s1")), // asked for k3s2, still runs k3s1
		cpfixtures.DecisionMachine("c", time.Hour, cpfixtures.WithVersion("v1.31.4+k3s10")),
		cpfixtures.DecisionMachine("d", time.Hour, cpfixtures.WithVersion("v1.30.9+k3s1")),
		cpfixtures.DecisionMachine("e", time.Hour, cpfixtures.WithVersion("v1.31.4+k3s2")),
	)
	got := versionsOf(machines)
	want := []clusterv1.StatusVersion{
		{Version: "v1.30.9+k3s1", Replicas: 1}, {Version: "v1.31.4+k3s1", Replicas: 1},
		{Version: "v1.31.4+k3s2", Replicas: 2}, {Version: "v1.31.4+k3s10", Replicas: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("versions = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("versions = %v, want %v", got, want)
			break
		}
	}
	kcp := tokenAvailable(cpfixtures.DecisionKCP(5, nil))
	setStatus(statusCluster(), kcp, observed{machines: machines, nodes: workload.Nodes{}})
	if kcp.Status.Version != "v1.30.9+k3s1" || len(kcp.Status.Versions) != 4 {
		t.Errorf("status version %q versions %v, want the oldest first", kcp.Status.Version, kcp.Status.Versions)
	}
	if versionsOf(collections.New()) != nil {
		t.Error("versions of no Machine must be nil (the schema asks for at least one item)")
	}
}

// A new Machine without UpToDate yet does not make MachinesUpToDate flicker.
func TestMachinesUpToDateIgnoresBrandNewMachines(t *testing.T) {
	now := time.Now()
	fresh := cpfixtures.DecisionMachine("fresh", 0)
	fresh.CreationTimestamp = metav1.NewTime(now.Add(-2 * time.Second))
	old := cpfixtures.DecisionMachine("old", 0, withMachineCondition(clusterv1.MachineUpToDateCondition, metav1.ConditionTrue))
	kcp := cpfixtures.DecisionKCP(2, nil)
	setMachinesUpToDate(kcp, collections.FromMachines(fresh, old), now)
	if !conditions.IsTrue(kcp, controlplanev1.MachinesUpToDateCondition) {
		t.Errorf("MachinesUpToDate = %+v, want True", conditions.Get(kcp, controlplanev1.MachinesUpToDateCondition))
	}
	fresh.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	setMachinesUpToDate(kcp, collections.FromMachines(fresh, old), now)
	if c := conditions.Get(kcp, controlplanev1.MachinesUpToDateCondition); c.Status != metav1.ConditionUnknown {
		t.Errorf("MachinesUpToDate = %+v, want Unknown for a Machine that never got the condition", c)
	}
}
