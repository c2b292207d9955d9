package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/envtest"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
	"github.com/capk3s/capk3s/test/stack"
)

// The releases the scenarios run: most start on oldVersion and upgrade to newVersion (the
// newest supported minor); the scenarios that remove etcd members and set up the OS run
// on oldestVersion, so that the oldest and the newest supported minors are both covered.
const (
	oldestVersion = "v1.34.9+k3s1"
	oldVersion    = "v1.35.4+k3s1"
	newVersion    = "v1.36.1+k3s1"
	// waitTimeout bounds each wait for a cluster to reach a state; a server or agent
	// takes a few seconds here, a workload API 5–10 on a loaded machine; the margin is for a
	// machine shared with other test packages.
	waitTimeout = 3 * time.Minute
)

// scenario is one cluster, in its own namespace, on the shared stack.
type scenario struct {
	t        *testing.T
	ctx      context.Context
	ns       string
	key      types.NamespacedName
	objs     *stack.Cluster
	token    *tokenWatch
	workload client.Client
	// deleting is set once the scenario deletes its cluster: its servers then go
	// without leaving etcd, and quorum is lost on purpose.
	deleting bool
	// restoring is set while the scenario restores its running cluster from a
	// snapshot: the restore deletes every server before a new one restores, so
	// quorum is lost on purpose until then (the simulator forgets that once the
	// restored etcd runs).
	restoring bool
	// datastore is set for a cluster on an external datastore: it has no etcd members.
	datastore bool
	// version is the k3s release the cluster is created with.
	version string
}

// newScenario starts the stack if needed and builds (but does not create) a cluster.
func newScenario(t *testing.T, servers, agents int32) *scenario {
	t.Helper()
	return newScenarioWith(t, stack.ClusterOptions{Servers: servers, Agents: agents})
}

// newScenarioWith is newScenario for a cluster with more options; namespace and name
// are the scenario's, and the version is oldVersion unless the options name one.
func newScenarioWith(t *testing.T, o stack.ClusterOptions) *scenario {
	t.Helper()
	startStack(t)
	ns := env.NewNamespace(t)
	s := &scenario{
		t: t, ctx: context.Background(), ns: ns, key: types.NamespacedName{Namespace: ns, Name: "k3s"},
		datastore: o.Datastore != nil, version: o.Version,
	}
	if s.version == "" {
		s.version = oldVersion
	}
	o.Namespace, o.Name, o.Version = ns, s.key.Name, s.version
	s.objs = stack.NewCluster(o)
	s.token = watchToken(t, ns, s.key.Name)
	t.Cleanup(func() {
		// A failed scenario leaves its cluster: stop its processes at least.
		if t.Failed() {
			_ = env.Client.Delete(context.Background(), s.objs.Cluster)
		}
	})
	return s
}

func (s *scenario) must(what string, err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatalf("%s: %v", what, err)
	}
}

// create creates the cluster's objects.
func (s *scenario) create() {
	s.t.Helper()
	for _, o := range s.objs.Objects() {
		s.must(fmt.Sprintf("creating %T %s", o, o.GetName()), env.Client.Create(s.ctx, o))
	}
}

// healthy fails fast when the simulator saw what must never happen: etcd quorum lost,
// or a machine whose bootstrap data k3s would refuse.
func (s *scenario) healthy(ctx context.Context) error {
	if simulator.QuorumLost(s.key) && !s.deleting && !s.restoring {
		return errors.New("etcd lost quorum")
	}
	list := &simv1.SimMachineList{}
	if err := env.Client.List(ctx, list, client.InNamespace(s.ns)); err != nil {
		return err
	}
	for _, m := range list.Items {
		if c := conditions.Get(&m, clusterv1.ReadyCondition); c != nil && (c.Reason == "BootstrapDataInvalid" || c.Reason == "JoinRefused" || c.Reason == "DatastoreUnreachable") {
			return fmt.Errorf("SimMachine %s: %s: %s", m.Name, c.Reason, c.Message)
		}
	}
	return nil
}

// eventually waits for cond, failing at once when the cluster is not healthy.
func (s *scenario) eventually(what string, cond func(ctx context.Context) (bool, string, error)) {
	s.t.Helper()
	last := ""
	err := envtest.Eventually(s.ctx, waitTimeout, func(ctx context.Context) (bool, error) {
		if err := s.healthy(ctx); err != nil {
			return false, err
		}
		ok, state, err := cond(ctx)
		// The call that hits the deadline fails with no state: keep the last one seen.
		if state != "" {
			last = state
		}
		return ok, err
	})
	if err != nil {
		s.dump()
		s.t.Fatalf("waiting for %s: %v; last seen: %s", what, err, last)
	}
}

// machines lists the cluster's Machines matching the labels.
func (s *scenario) machines(ctx context.Context, labels client.MatchingLabels) ([]clusterv1.Machine, error) {
	list := &clusterv1.MachineList{}
	err := env.Client.List(ctx, list, client.InNamespace(s.ns), labels)
	return list.Items, err
}

func (s *scenario) serverMachines(ctx context.Context) ([]clusterv1.Machine, error) {
	return s.machines(ctx, client.MatchingLabels{clusterv1.MachineControlPlaneNameLabel: s.objs.ControlPlane.Name})
}

// notReady describes the first Machine that is not Ready and why, for failure messages.
func notReady(machines []clusterv1.Machine) string {
	for _, m := range machines {
		if c := conditions.Get(&m, clusterv1.ReadyCondition); c == nil || c.Status != metav1.ConditionTrue {
			if c == nil {
				return m.Name + " has no Ready condition"
			}
			return fmt.Sprintf("%s not Ready: %s: %q", m.Name, c.Reason, c.Message)
		}
	}
	return "all Machines Ready"
}

// allJoined says whether every Machine has a Node and the wanted version.
func allJoined(machines []clusterv1.Machine, version string) bool {
	for _, m := range machines {
		if !m.Status.NodeRef.IsDefined() || m.Spec.Version != version || !m.DeletionTimestamp.IsZero() {
			return false
		}
	}
	return true
}

// waitServers waits until the control plane has want servers, all ready, available
// and up to date at version, each with its Node, and as many etcd members (none on a
// datastore cluster).
func (s *scenario) waitServers(want int32, version string) {
	s.t.Helper()
	s.eventually(fmt.Sprintf("%d servers at %s", want, version), func(ctx context.Context) (bool, string, error) {
		kcp := &controlplanev1.KThreesControlPlane{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s.objs.ControlPlane), kcp); err != nil {
			return false, "", err
		}
		machines, err := s.serverMachines(ctx)
		if err != nil {
			return false, "", err
		}
		st := kcp.Status
		members := simulator.EtcdMembers(s.key)
		wantMembers := int(want)
		if s.datastore {
			wantMembers = 0
		}
		state := fmt.Sprintf("status replicas=%d ready=%d available=%d upToDate=%d; %d Machines; etcd members %v; %s",
			ptr.Deref(st.Replicas, -1), ptr.Deref(st.ReadyReplicas, -1), ptr.Deref(st.AvailableReplicas, -1),
			ptr.Deref(st.UpToDateReplicas, -1), len(machines), members, notReady(machines))
		ok := ptr.Deref(st.Replicas, -1) == want && ptr.Deref(st.ReadyReplicas, -1) == want &&
			ptr.Deref(st.AvailableReplicas, -1) == want && ptr.Deref(st.UpToDateReplicas, -1) == want &&
			len(machines) == int(want) && allJoined(machines, version) && len(members) == wantMembers
		return ok, state, nil
	})
}

// waitAgents waits until the MachineDeployment has want agents, all ready and up to
// date, each with its Node.
func (s *scenario) waitAgents(want int32) {
	s.t.Helper()
	s.eventually(fmt.Sprintf("%d agents", want), func(ctx context.Context) (bool, string, error) {
		md := &clusterv1.MachineDeployment{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s.objs.Workers), md); err != nil {
			return false, "", err
		}
		machines, err := s.machines(ctx, client.MatchingLabels{stack.PoolLabel: "agents"})
		if err != nil {
			return false, "", err
		}
		st := md.Status
		state := fmt.Sprintf("status replicas=%d ready=%d available=%d upToDate=%d; %d Machines; %s",
			ptr.Deref(st.Replicas, -1), ptr.Deref(st.ReadyReplicas, -1), ptr.Deref(st.AvailableReplicas, -1),
			ptr.Deref(st.UpToDateReplicas, -1), len(machines), notReady(machines))
		ok := md.Status.ObservedGeneration == md.Generation &&
			ptr.Deref(st.Replicas, -1) == want && ptr.Deref(st.ReadyReplicas, -1) == want &&
			ptr.Deref(st.AvailableReplicas, -1) == want && ptr.Deref(st.UpToDateReplicas, -1) == want &&
			len(machines) == int(want) && allJoined(machines, md.Spec.Template.Spec.Version)
		return ok, state, nil
	})
}

// workloadClient is a client of the workload cluster built from the kubeconfig that
// capk3s wrote, as a user would use it.
func (s *scenario) workloadClient() client.Client {
	s.t.Helper()
	if s.workload != nil {
		return s.workload
	}
	data, err := kubeconfig.FromSecret(s.ctx, env.Client, s.key)
	s.must("reading the kubeconfig Secret", err)
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	s.must("parsing the kubeconfig", err)
	s.workload, err = client.New(cfg, client.Options{})
	s.must("workload client", err)
	return s.workload
}

// nodes lists the workload cluster's Nodes by name.
func (s *scenario) nodes() map[string]corev1.Node {
	s.t.Helper()
	list := &corev1.NodeList{}
	s.must("listing Nodes", s.workloadClient().List(s.ctx, list))
	out := map[string]corev1.Node{}
	for _, n := range list.Items {
		out[n.Name] = n
	}
	return out
}

// tokenSecret reads the cluster's token Secret.
func (s *scenario) tokenSecret() *corev1.Secret {
	s.t.Helper()
	sec := &corev1.Secret{}
	s.must("reading the token Secret", env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: s.key.Name + "-token"}, sec))
	return sec
}

// patchKCP changes the control plane's spec.
func (s *scenario) patchKCP(change func(*controlplanev1.KThreesControlPlane)) {
	s.t.Helper()
	kcp := &controlplanev1.KThreesControlPlane{}
	s.must("reading KThreesControlPlane", env.Client.Get(s.ctx, client.ObjectKeyFromObject(s.objs.ControlPlane), kcp))
	before := kcp.DeepCopy()
	change(kcp)
	s.must("patching KThreesControlPlane", env.Client.Patch(s.ctx, kcp, client.MergeFrom(before)))
}

// patchWorkers changes the MachineDeployment's spec.
func (s *scenario) patchWorkers(change func(*clusterv1.MachineDeployment)) {
	s.t.Helper()
	md := &clusterv1.MachineDeployment{}
	s.must("reading MachineDeployment", env.Client.Get(s.ctx, client.ObjectKeyFromObject(s.objs.Workers), md))
	before := md.DeepCopy()
	change(md)
	s.must("patching MachineDeployment", env.Client.Patch(s.ctx, md, client.MergeFrom(before)))
}

// clusterAvailable waits for the Cluster's Available condition.
func (s *scenario) clusterAvailable() {
	s.t.Helper()
	s.eventually("the Cluster to be Available", func(ctx context.Context) (bool, string, error) {
		c := &clusterv1.Cluster{}
		if err := env.Client.Get(ctx, s.key, c); err != nil {
			return false, "", err
		}
		cond := conditions.Get(c, clusterv1.AvailableCondition)
		if cond == nil {
			return false, "no Available condition", nil
		}
		return cond.Status == metav1.ConditionTrue, cond.Reason + ": " + cond.Message, nil
	})
}

// serverNames are the names of the control plane's Machines.
func (s *scenario) serverNames() sets.Set[string] {
	s.t.Helper()
	return s.machineNames(client.MatchingLabels{clusterv1.MachineControlPlaneNameLabel: s.objs.ControlPlane.Name})
}

// agentNames are the names of the MachineDeployment's Machines.
func (s *scenario) agentNames() sets.Set[string] {
	s.t.Helper()
	return s.machineNames(client.MatchingLabels{stack.PoolLabel: "agents"})
}

func (s *scenario) machineNames(labels client.MatchingLabels) sets.Set[string] {
	s.t.Helper()
	machines, err := s.machines(s.ctx, labels)
	s.must("listing Machines", err)
	names := sets.New[string]()
	for _, m := range machines {
		names.Insert(m.Name)
	}
	return names
}
