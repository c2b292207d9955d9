package controlplane

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/test/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/workload"
)

// etcdServer is a server Machine (with the hook) for pure tests; opts shape it.
func etcdServer(name string, opts ...func(*clusterv1.Machine)) *clusterv1.Machine {
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{etcdMemberHook: ""}}}
	for _, o := range opts {
		o(m)
	}
	return m
}

// etcdDeletedAt marks the Machine deleted at a second, so that tests can order deletions.
func etcdDeletedAt(second int) func(*clusterv1.Machine) {
	return func(m *clusterv1.Machine) {
		m.DeletionTimestamp = ptr.To(metav1.NewTime(time.Unix(int64(1_700_000_000+second), 0)))
	}
}

// etcdAtHook puts the Machine where CAPI's Machine controller waits for pre-terminate hooks.
func etcdAtHook(m *clusterv1.Machine) {
	conditions.Set(m, metav1.Condition{
		Type: clusterv1.MachineDeletingCondition, Status: metav1.ConditionTrue,
		Reason: clusterv1.MachineDeletingWaitingForPreTerminateHookReason,
	})
}

func etcdDraining(m *clusterv1.Machine) {
	conditions.Set(m, metav1.Condition{
		Type: clusterv1.MachineDeletingCondition, Status: metav1.ConditionTrue, Reason: clusterv1.MachineDeletingDrainingNodeReason,
	})
}

func etcdWithoutHook(m *clusterv1.Machine) { delete(m.Annotations, etcdMemberHook) }

func etcdWithAnnotation(k, v string) func(*clusterv1.Machine) {
	return func(m *clusterv1.Machine) { m.Annotations[k] = v }
}

// etcdMember is the Node of a healthy etcd member, as k3s registers it; opts shape it.
func etcdMember(name string, opts ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{k3s.EtcdRoleLabel: "true"}},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func etcdNotReady(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }

func etcdNotMember(n *corev1.Node) { delete(n.Labels, k3s.EtcdRoleLabel) }

// etcdAsked makes a Node one that k3s was asked to remove from etcd.
func etcdAsked(n *corev1.Node) {
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[k3s.EtcdRemoveAnnotation] = "true"
}

// etcdRemoved makes a Node one whose member k3s removed after being asked; the value is the
// member's name, not the Node's.
func etcdRemoved(n *corev1.Node) {
	etcdAsked(n)
	n.Annotations[k3s.EtcdRemovedNodeNameAnnotation] = n.Name + "-1a2b3c4d"
}

// etcdRemovedConsumed makes a Node one whose member k3s from v1.34.2 removed: it
// records the removal and deletes the remove annotation, the member's name and its
// address (k3s pkg/etcd/member_controller.go).
func etcdRemovedConsumed(n *corev1.Node) {
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[k3s.EtcdRemovedNodeNameAnnotation] = n.Name + "-1a2b3c4d"
	delete(n.Annotations, k3s.EtcdRemoveAnnotation)
}

// etcdSeen builds what a pass saw, each Machine's Node having the Machine's name.
func etcdSeen(machines []*clusterv1.Machine, nodes ...*corev1.Node) observed {
	o := observed{machines: collections.FromMachines(machines...), nodes: workload.Nodes{}}
	for _, n := range nodes {
		o.nodes[n.Name] = n
	}
	return o
}

func TestEnsureEtcdHook(t *testing.T) {
	for _, tc := range []struct {
		name        string
		machine     *clusterv1.Machine
		wantChanged bool
		want        map[string]string
	}{
		{"no annotations", &clusterv1.Machine{}, true, map[string]string{etcdMemberHook: ""}},
		{"other annotations are kept",
			&clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"a": "b"}}},
			true, map[string]string{"a": "b", etcdMemberHook: ""}},
		{"hook present", etcdServer("m"), false, map[string]string{etcdMemberHook: ""}},
		{"a deleting Machine is left alone", etcdServer("m", etcdWithoutHook, etcdDeletedAt(0)), false, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ensureEtcdHook(tc.machine); got != tc.wantChanged {
				t.Errorf("changed = %v, want %v", got, tc.wantChanged)
			}
			if got := tc.machine.Annotations; !maps.Equal(got, tc.want) {
				t.Errorf("annotations = %v, want %v", got, tc.want)
			}
		})
	}
	if !strings.HasPrefix(etcdMemberHook, clusterv1.PreTerminateDeleteHookAnnotationPrefix+"/") {
		t.Errorf("%s is not a CAPI pre-terminate hook", etcdMemberHook)
	}
}

func TestSetEtcdHealth(t *testing.T) {
	for _, tc := range []struct {
		name   string
		seen   observed
		status metav1.ConditionStatus
		reason string
		// message must contain these (and, for a healthy cluster, nothing).
		message []string
	}{
		{"workload unreachable", observed{machines: collections.FromMachines(etcdServer("a"))},
			metav1.ConditionUnknown, controlplanev1.WorkloadClusterUnreachableReason, []string{"cannot be reached"}},
		{"no servers", etcdSeen(nil), metav1.ConditionUnknown, etcdClusterHealthUnknownReason, []string{"no servers"}},
		{"all healthy members",
			etcdSeen([]*clusterv1.Machine{etcdServer("a"), etcdServer("b"), etcdServer("c")}, etcdMember("a"), etcdMember("b"), etcdMember("c")),
			metav1.ConditionTrue, etcdClusterHealthyReason, nil},
		{"a Node not Ready, one without the etcd role, one missing",
			etcdSeen([]*clusterv1.Machine{etcdServer("a"), etcdServer("b"), etcdServer("c"), etcdServer("d")},
				etcdMember("a"), etcdMember("b", etcdNotReady), etcdMember("c", etcdNotMember)),
			metav1.ConditionFalse, etcdClusterNotHealthyReason,
			[]string{"b (Node not Ready)", "c (Node without the node-role.kubernetes.io/etcd label)", "d (no Node)"}},
		{"a deleted server that has not left etcd yet",
			etcdSeen([]*clusterv1.Machine{etcdServer("a"), etcdServer("b", etcdDeletedAt(0), etcdAtHook)}, etcdMember("a"), etcdMember("b", etcdAsked)),
			metav1.ConditionFalse, etcdClusterNotHealthyReason, []string{"b (member removal pending)"}},
		{"a deleted server that has left etcd is not counted",
			etcdSeen([]*clusterv1.Machine{etcdServer("a"), etcdServer("b", etcdDeletedAt(0), etcdWithoutHook)}, etcdMember("a"), etcdMember("b", etcdRemoved)),
			metav1.ConditionTrue, etcdClusterHealthyReason, nil},
		{"k3s removed the member of a server that is not being deleted",
			etcdSeen([]*clusterv1.Machine{etcdServer("a"), etcdServer("b"), etcdServer("c")}, etcdMember("a"), etcdMember("b", etcdRemovedConsumed), etcdMember("c")),
			metav1.ConditionFalse, etcdClusterNotHealthyReason, []string{"b (etcd member removed)"}},
		{"someone asked k3s to remove a server that is not being deleted",
			etcdSeen([]*clusterv1.Machine{etcdServer("a"), etcdServer("b")}, etcdMember("a"), etcdMember("b", etcdAsked)),
			metav1.ConditionFalse, etcdClusterNotHealthyReason, []string{"b (member removal requested)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kcp := &controlplanev1.KThreesControlPlane{}
			setEtcdHealth(kcp, tc.seen)
			c := conditions.Get(kcp, controlplanev1.EtcdClusterHealthyCondition)
			if c == nil {
				t.Fatal("EtcdClusterHealthy not set")
			}
			if c.Status != tc.status || c.Reason != tc.reason {
				t.Errorf("condition = %s/%s %q, want %s/%s", c.Status, c.Reason, c.Message, tc.status, tc.reason)
			}
			if tc.message == nil && c.Message != "" {
				t.Errorf("message = %q, want none", c.Message)
			}
			for _, want := range tc.message {
				if !strings.Contains(strings.ToLower(c.Message), strings.ToLower(want)) {
					t.Errorf("message = %q, want it to contain %q", c.Message, want)
				}
			}
		})
	}
}

func TestPlanEtcdMembership(t *testing.T) {
	initialized := &controlplanev1.KThreesControlPlane{}
	initialized.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	deletingKCP := initialized.DeepCopy()
	deletingKCP.DeletionTimestamp = ptr.To(metav1.Now())
	cluster := &clusterv1.Cluster{}
	deletingCluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: ptr.To(metav1.Now())}}
	threeServers := func(first func(*clusterv1.Machine), firstNode ...func(*corev1.Node)) observed {
		return etcdSeen([]*clusterv1.Machine{etcdServer("a", etcdDeletedAt(1), first), etcdServer("b"), etcdServer("c")},
			etcdMember("a", firstNode...), etcdMember("b"), etcdMember("c"))
	}

	for _, tc := range []struct {
		name        string
		cluster     *clusterv1.Cluster
		kcp         *controlplanev1.KThreesControlPlane
		seen        observed
		wantRelease []string
		wantRemove  string
	}{
		{"nothing is deleted", cluster, initialized,
			etcdSeen([]*clusterv1.Machine{etcdServer("a"), etcdServer("b")}, etcdMember("a"), etcdMember("b")), nil, ""},
		{"the Machine is still draining: it keeps its member", cluster, initialized, threeServers(etcdDraining), nil, ""},
		{"the Machine waits at pre-terminate: k3s is asked", cluster, initialized, threeServers(etcdAtHook), nil, "a"},
		{"other pre-terminate hooks go first", cluster, initialized,
			threeServers(func(m *clusterv1.Machine) {
				etcdAtHook(m)
				etcdWithAnnotation(clusterv1.PreTerminateDeleteHookAnnotationPrefix+"/other", "")(m)
			}), nil, ""},
		{"k3s has not answered yet", cluster, initialized, threeServers(etcdAtHook, etcdAsked), nil, ""},
		{"k3s removed the member: the hook goes", cluster, initialized, threeServers(etcdAtHook, etcdRemoved), []string{"a"}, ""},
		{"k3s removed the member and consumed the remove annotation: the hook goes, k3s is not asked again", cluster, initialized,
			threeServers(etcdAtHook, etcdRemovedConsumed), []string{"a"}, ""},
		{"a removal k3s answered by consuming the annotation is not in flight: the next one starts", cluster, initialized,
			etcdSeen([]*clusterv1.Machine{etcdServer("a", etcdDeletedAt(1), etcdAtHook), etcdServer("b", etcdDeletedAt(2), etcdAtHook), etcdServer("c")},
				etcdMember("a", etcdRemovedConsumed), etcdMember("b"), etcdMember("c")), []string{"a"}, "b"},
		{"the Node is gone: the hook goes", cluster, initialized,
			etcdSeen([]*clusterv1.Machine{etcdServer("a", etcdDeletedAt(1), etcdAtHook, func(m *clusterv1.Machine) { m.Status.NodeRef.Name = "a" }),
				etcdServer("b"), etcdServer("c")}, etcdMember("b"), etcdMember("c")), []string{"a"}, ""},
		{"a Machine that never got a Node: the hook goes at once", cluster, initialized,
			etcdSeen([]*clusterv1.Machine{etcdServer("a", etcdDeletedAt(1), etcdDraining), etcdServer("b"), etcdServer("c")}, etcdMember("b"), etcdMember("c")),
			[]string{"a"}, ""},
		{"one removal at a time: the second waits for the first", cluster, initialized,
			etcdSeen([]*clusterv1.Machine{etcdServer("a", etcdDeletedAt(1), etcdAtHook), etcdServer("b", etcdDeletedAt(2), etcdAtHook), etcdServer("c")},
				etcdMember("a", etcdAsked), etcdMember("b"), etcdMember("c")), nil, ""},
		{"one removal at a time: the oldest deletion starts", cluster, initialized,
			etcdSeen([]*clusterv1.Machine{etcdServer("a", etcdDeletedAt(2), etcdAtHook), etcdServer("b", etcdDeletedAt(1), etcdAtHook), etcdServer("c")},
				etcdMember("a"), etcdMember("b"), etcdMember("c")), nil, "b"},
		{"a confirmed removal is released and the next one starts", cluster, initialized,
			etcdSeen([]*clusterv1.Machine{etcdServer("a", etcdDeletedAt(1), etcdAtHook), etcdServer("b", etcdDeletedAt(2), etcdAtHook), etcdServer("c")},
				etcdMember("a", etcdRemoved), etcdMember("b"), etcdMember("c")), []string{"a"}, "b"},
		{"a removal asked for on another Node blocks this one", cluster, initialized,
			etcdSeen([]*clusterv1.Machine{etcdServer("a", etcdDeletedAt(1), etcdAtHook), etcdServer("b"), etcdServer("c")},
				etcdMember("a"), etcdMember("b", etcdAsked), etcdMember("c")), nil, ""},
		{"the workload cluster cannot be read: wait", cluster, initialized,
			observed{machines: collections.FromMachines(etcdServer("a", etcdDeletedAt(1), etcdAtHook), etcdServer("b"), etcdServer("c"))}, nil, ""},
		{"the Cluster is deleted: every hook goes at once", deletingCluster, initialized,
			etcdSeen([]*clusterv1.Machine{etcdServer("a", etcdDeletedAt(1), etcdDraining), etcdServer("b", etcdDeletedAt(1), etcdDraining)}, etcdMember("a"), etcdMember("b")),
			[]string{"a", "b"}, ""},
		{"the control plane is deleted: every hook goes at once", cluster, deletingKCP,
			etcdSeen([]*clusterv1.Machine{etcdServer("a", etcdDeletedAt(1)), etcdServer("b", etcdDeletedAt(2))}), []string{"a", "b"}, ""},
		{"the control plane was never initialized: the hook goes at once", cluster, &controlplanev1.KThreesControlPlane{},
			etcdSeen([]*clusterv1.Machine{etcdServer("a", etcdDeletedAt(1), etcdAtHook), etcdServer("b")}), []string{"a"}, ""},
		{"the last member: nothing to hand over", cluster, initialized,
			etcdSeen([]*clusterv1.Machine{etcdServer("a", etcdDeletedAt(1), etcdWithoutHook), etcdServer("b", etcdDeletedAt(2), etcdAtHook)},
				etcdMember("a", etcdRemoved), etcdMember("b")), []string{"b"}, ""},
		{"a Node that is not an etcd member: nothing to hand over", cluster, initialized,
			threeServers(etcdAtHook, etcdNotMember), []string{"a"}, ""},
		{"a removal asked of a Node that is not a member is not in flight", cluster, initialized,
			etcdSeen([]*clusterv1.Machine{etcdServer("a", etcdDeletedAt(1), etcdAtHook), etcdServer("b"), etcdServer("c")},
				etcdMember("a"), etcdMember("b", etcdNotMember, etcdAsked), etcdMember("c")), nil, "a"},
		{"a deleted Machine without the hook is not touched", cluster, initialized,
			etcdSeen([]*clusterv1.Machine{etcdServer("a", etcdDeletedAt(1), etcdAtHook, etcdWithoutHook), etcdServer("b"), etcdServer("c")},
				etcdMember("a"), etcdMember("b"), etcdMember("c")), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := planEtcdMembership(tc.cluster, tc.kcp, tc.seen)
			var released []string
			for _, m := range plan.release {
				released = append(released, m.Name)
			}
			slices.Sort(released)
			if !slices.Equal(released, tc.wantRelease) {
				t.Errorf("released %v, want %v", released, tc.wantRelease)
			}
			remove := ""
			if plan.remove != nil {
				remove = plan.remove.Name
			}
			if remove != tc.wantRemove {
				t.Errorf("remove %q, want %q", remove, tc.wantRemove)
			}
		})
	}
}

// etcdWorkloadIsManagement is a ClusterCache whose workload cluster is the test
// apiserver itself; the etcd handshake uses GetUncachedClient, and GetRESTConfig for
// the reads on a connection of its own.
type etcdWorkloadIsManagement struct {
	clustercache.ClusterCache
}

func (etcdWorkloadIsManagement) GetRESTConfig(context.Context, client.ObjectKey) (*rest.Config, error) {
	return env.Config, nil
}

func (etcdWorkloadIsManagement) GetUncachedClient(context.Context, client.ObjectKey) (client.Client, error) {
	return env.Client, nil
}

// TestEtcdMembershipHandshake runs the handshake against the apiserver: two servers
// deleted at once leave etcd one after the other, each Machine keeping its hook until
// k3s (played by the test) confirms, under both behaviours of k3s's member controller:
// up to v1.34.1 it keeps the remove annotation beside removed-node-name; from v1.34.2
// it deletes it, with the member's name and address (k3s pkg/etcd/member_controller.go).
func TestEtcdMembershipHandshake(t *testing.T) {
	t.Run("k3s v1.34.1 keeps remove", func(t *testing.T) { etcdHandshake(t, false) })
	t.Run("k3s v1.34.2 and later consume remove", func(t *testing.T) { etcdHandshake(t, true) })
}

func etcdHandshake(t *testing.T, consumes bool) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"}}
	kcp := &controlplanev1.KThreesControlPlane{}
	kcp.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	r := &Reconciler{Client: env.Client, ClusterCache: etcdWorkloadIsManagement{}}

	names := []string{"a", "b", "c"}
	for _, name := range names {
		m := &clusterv1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
				// The finalizer stands in for CAPI's: deleted Machines stay to be looked at.
				Finalizers: []string{clusterv1.MachineFinalizer}},
			Spec: clusterv1.MachineSpec{
				ClusterName: cluster.Name, Version: "v1.31.4+k3s1",
				Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To(name)},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineKind, Name: name,
				},
			},
		}
		ensureEtcdHook(m)
		etcdMust(t, env.Client.Create(ctx, m))
		t.Cleanup(func() {
			_ = env.Client.Patch(ctx, m, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))
		})
		n := etcdMember(ns + "-" + name)
		n.Annotations = map[string]string{k3s.EtcdNodeNameAnnotation: n.Name + "-1a2b3c4d", "etcd.k3s.cattle.io/node-address": "10.0.0.1"}
		etcdMust(t, env.Client.Create(ctx, n))
		t.Cleanup(func() { _ = env.Client.Delete(ctx, n) })
	}
	// a and b are deleted and wait at pre-terminate, as CAPI's Machine controller
	// leaves them.
	for _, name := range names[:2] {
		m := &clusterv1.Machine{}
		etcdMust(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m))
		etcdMust(t, env.Client.Delete(ctx, m))
		etcdMust(t, env.Client.Get(ctx, client.ObjectKeyFromObject(m), m))
		etcdAtHook(m)
		etcdMust(t, env.Client.Status().Update(ctx, m))
	}

	// pass reads what a pass would see, lets stale change it (a lagging cache), and
	// runs the handshake once.
	pass := func(stale ...func(*observed)) {
		t.Helper()
		list := &clusterv1.MachineList{}
		etcdMust(t, env.Client.List(ctx, list, client.InNamespace(ns)))
		seen := observed{machines: collections.FromMachineList(list), nodes: workload.Nodes{}}
		for _, name := range names {
			n := &corev1.Node{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: ns + "-" + name}, n); err == nil {
				seen.nodes[name] = n
			}
		}
		for _, f := range stale {
			f(&seen)
		}
		etcdMust(t, r.reconcileEtcdMembership(ctx, cluster, kcp, &seen))
	}
	// state is each server's hook and its Node's removal request, as "hook/asked".
	state := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, name := range names {
			m, n := &clusterv1.Machine{}, &corev1.Node{}
			etcdMust(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m))
			etcdMust(t, env.Client.Get(ctx, client.ObjectKey{Name: ns + "-" + name}, n))
			s := "-/"
			if hasEtcdHook(m) {
				s = "hook/"
			}
			switch {
			case removalConfirmed(n):
				s += "removed"
			case removalRequested(n):
				s += "asked"
			default:
				s += "-"
			}
			out[name] = s
		}
		return out
	}
	expect := func(step string, want map[string]string) {
		t.Helper()
		if got := state(); !maps.Equal(got, want) {
			t.Fatalf("%s: state = %v, want %v", step, got, want)
		}
	}
	confirm := func(name string) {
		t.Helper()
		n := &corev1.Node{}
		etcdMust(t, env.Client.Get(ctx, client.ObjectKey{Name: ns + "-" + name}, n))
		if !removalRequested(n) {
			t.Fatalf("k3s answers a Node that was not asked: %v", n.Annotations)
		}
		before := n.DeepCopy()
		n.Annotations[k3s.EtcdRemovedNodeNameAnnotation] = n.Annotations[k3s.EtcdNodeNameAnnotation]
		delete(n.Annotations, k3s.EtcdNodeNameAnnotation)
		delete(n.Annotations, "etcd.k3s.cattle.io/node-address")
		if consumes {
			delete(n.Annotations, k3s.EtcdRemoveAnnotation)
		}
		etcdMust(t, env.Client.Patch(ctx, n, client.MergeFrom(before)))
	}

	pass()
	expect("first pass", map[string]string{"a": "hook/asked", "b": "hook/-", "c": "hook/-"})
	pass()
	expect("k3s has not answered", map[string]string{"a": "hook/asked", "b": "hook/-", "c": "hook/-"})
	// A cache that has not seen the request on a's Node yet, nor a at pre-terminate,
	// makes b look next: the live Nodes still say a's removal is in flight.
	pass(func(seen *observed) {
		a := seen.nodes["a"].DeepCopy()
		delete(a.Annotations, k3s.EtcdRemoveAnnotation)
		seen.nodes["a"] = a
		etcdDraining(seen.machines["a"])
	})
	expect("a lagging cache", map[string]string{"a": "hook/asked", "b": "hook/-", "c": "hook/-"})
	confirm("a")
	// A cache that saw neither the request nor k3s's answer on a's Node: the live
	// Node says k3s removed the member, so k3s is not asked again (from v1.34.2 it
	// would fail on every retry, the member's name being gone).
	pass(func(seen *observed) {
		a := seen.nodes["a"].DeepCopy()
		a.Annotations = map[string]string{k3s.EtcdNodeNameAnnotation: a.Name + "-1a2b3c4d"}
		seen.nodes["a"] = a
	})
	if n := (&corev1.Node{}); env.Client.Get(ctx, client.ObjectKey{Name: ns + "-a"}, n) == nil && consumes && removalRequested(n) {
		t.Fatalf("k3s was asked again to remove a member it removed: %v", n.Annotations)
	}
	pass()
	expect("k3s removed a", map[string]string{"a": "-/removed", "b": "hook/asked", "c": "hook/-"})
	confirm("b")
	pass()
	expect("k3s removed b", map[string]string{"a": "-/removed", "b": "-/removed", "c": "hook/-"})
	pass()
	expect("at rest", map[string]string{"a": "-/removed", "b": "-/removed", "c": "hook/-"})
}

func etcdMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
