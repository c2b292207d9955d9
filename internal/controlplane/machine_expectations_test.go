package controlplane

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util/test/builder"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/token"
)

// laggingMachines is a client whose Machine lists can be frozen: while frozen, a list
// answers what the same list answered last before freezing, as an informer that has
// not received the Machine events since; every other read and every write reaches the
// apiserver, as the other informers and the writes of a manager that have caught up.
type laggingMachines struct {
	client.Client
	mu     sync.Mutex
	last   map[string]*clusterv1.MachineList
	frozen map[string]*clusterv1.MachineList
}

func newLaggingMachines() *laggingMachines {
	return &laggingMachines{Client: env.Client, last: map[string]*clusterv1.MachineList{}}
}

func (c *laggingMachines) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	machines, ok := list.(*clusterv1.MachineList)
	if !ok {
		return c.Client.List(ctx, list, opts...)
	}
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	key := o.Namespace
	if o.LabelSelector != nil {
		key += "|" + o.LabelSelector.String()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if answer, ok := c.frozen[key]; ok {
		answer.DeepCopyInto(machines)
		return nil
	}
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	c.last[key] = machines.DeepCopy()
	return nil
}

// freeze makes every Machine list answer as it did last.
func (c *laggingMachines) freeze() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen = map[string]*clusterv1.MachineList{}
	for k, v := range c.last {
		c.frozen[k] = v.DeepCopy()
	}
}

// catchUp ends the lag.
func (c *laggingMachines) catchUp() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen = nil
}

// workloadIsManagement is a ClusterCache whose workload cluster is the test apiserver
// itself: its Nodes are the workload cluster's.
type workloadIsManagement struct {
	clustercache.ClusterCache
}

func (workloadIsManagement) GetReader(context.Context, client.ObjectKey) (client.Reader, error) {
	return env.Client, nil
}

func (workloadIsManagement) GetUncachedClient(context.Context, client.ObjectKey) (client.Client, error) {
	return env.Client, nil
}

// expectationsReconciler is a Reconciler as SetupWithManager makes it, reading Machines
// through c and the apiserver live through the API reader.
func expectationsReconciler(c client.Client) *Reconciler {
	return &Reconciler{Client: c, APIReader: env.Client, ClusterCache: workloadIsManagement{}, writes: newOwnWrites()}
}

func runPass(t *testing.T, r *Reconciler, kcp *controlplanev1.KThreesControlPlane) ctrl.Result {
	t.Helper()
	result, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(kcp)})
	if err != nil {
		t.Fatal(err)
	}
	return result
}

// liveServers are the namespace's Machines as the apiserver has them, and those of
// them being deleted.
func liveServers(t *testing.T, ns string) (all, deleting []string) {
	t.Helper()
	for name, m := range listServers(t, ns) {
		all = append(all, name)
		if !m.DeletionTimestamp.IsZero() {
			deleting = append(deleting, name)
		}
	}
	return sorted(all), sorted(deleting)
}

// A pass whose Machine list does not show yet the server the previous pass created
// must not create another: for k3s a second server is a second etcd member. Once the
// list shows it, passes go on as usual.
func TestAPassDoesNotCreateAServerItsCacheDoesNotShowYet(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	createInfraTemplate(t, ns)
	cluster, kcp := newClusterWithControlPlane(t, ns, false)
	cluster.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "127.0.0.1", Port: 6443}
	if err := env.Client.Update(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	lag := newLaggingMachines()
	r := expectationsReconciler(lag)

	// The first passes make the cluster's secrets, then the first server.
	var all []string
	for pass := 1; pass <= 5 && len(all) == 0; pass++ {
		runPass(t, r, kcp)
		all, _ = liveServers(t, ns)
	}
	if len(all) != 1 {
		t.Fatalf("servers after the first passes: %v, want one", all)
	}

	// The Machine informer lags behind the creation; the control plane's does not.
	lag.freeze()
	result := runPass(t, r, kcp)
	if got, _ := liveServers(t, ns); len(got) != 1 {
		t.Fatalf("a pass whose Machine list lagged behind the creation of %v made another server: %v", all, got)
	}
	if result.RequeueAfter == 0 {
		t.Errorf("a pass that waited for its Machine list asked for no wake-up")
	}

	lag.catchUp()
	runPass(t, r, kcp)
	if got, _ := liveServers(t, ns); len(got) != 1 {
		t.Fatalf("servers once the Machine list caught up: %v, want %v", got, all)
	}
	if got := readControlPlane(t, kcp); ptr.Deref(got.Status.Replicas, 0) != 1 {
		t.Errorf("status.replicas = %v once the Machine list caught up, want 1", got.Status.Replicas)
	}
}

// A pass whose Machine list still shows the server the previous pass deleted must
// not take another step on it. Here the Cluster's failure domains change in between:
// the lagging list makes the other failure domain's server a stray, and a scale-down
// of 3 to 2 would delete that one too, two etcd members of three.
func TestAPassDoesNotActOnAServerItsCacheShowsUndeleted(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster, kcp := newClusterWithControlPlane(t, ns, false)
	lag := newLaggingMachines()
	r := expectationsReconciler(lag)

	// Without an endpoint the passes stop after the CAs and the token.
	tokenKey := client.ObjectKey{Namespace: ns, Name: token.SecretName(cluster.Name)}
	for pass := 1; pass <= 5; pass++ {
		runPass(t, r, kcp)
		if err := env.Client.Get(ctx, tokenKey, &corev1.Secret{}); err == nil {
			break
		}
	}
	kcp = readControlPlane(t, kcp)
	kcp.Spec.Replicas = ptr.To[int32](2)
	if err := env.Client.Update(ctx, kcp); err != nil {
		t.Fatal(err)
	}
	// Three running servers: a in fd2, b and c in fd1, each with a Ready Node.
	for name, fd := range map[string]string{"a": "fd2", "b": "fd1", "c": "fd1"} {
		m := desiredMachine(kcp, cluster, name, fd, clusterv1.ContractVersionedObjectReference{
			APIGroup: builder.BootstrapGroupVersion.Group, Kind: builder.GenericBootstrapConfigKind, Name: name,
		}, clusterv1.ContractVersionedObjectReference{
			APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineKind, Name: name,
		})
		m.Spec.ProviderID = "test://" + ns + "/" + name
		// The finalizer stands in for CAPI's: a deleted server stays, being deleted.
		m.Finalizers = []string{clusterv1.MachineFinalizer}
		etcdMust(t, env.Client.Create(ctx, m))
		t.Cleanup(func() {
			_ = env.Client.Patch(ctx, m, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))
		})
		n := etcdMember(ns + "-" + name)
		n.Spec.ProviderID = m.Spec.ProviderID
		etcdMust(t, env.Client.Create(ctx, n))
		t.Cleanup(func() { _ = env.Client.Delete(ctx, n) })
	}
	setFailureDomains := func(names ...string) {
		t.Helper()
		cluster.Status.FailureDomains = nil
		for _, name := range names {
			cluster.Status.FailureDomains = append(cluster.Status.FailureDomains, clusterv1.FailureDomain{Name: name, ControlPlane: ptr.To(true)})
		}
		etcdMust(t, env.Client.Status().Update(ctx, cluster))
	}
	cluster.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "127.0.0.1", Port: 6443}
	etcdMust(t, env.Client.Update(ctx, cluster))
	setFailureDomains("fd1", "fd2")

	// A pass scales down: the victim comes from fd1, which has the most servers.
	var deleting []string
	for pass := 1; pass <= 5 && len(deleting) == 0; pass++ {
		runPass(t, r, kcp)
		_, deleting = liveServers(t, ns)
	}
	if len(deleting) != 1 || deleting[0] == "a" {
		t.Fatalf("servers being deleted after the scale-down: %v, want b or c", deleting)
	}

	// fd2 is retired; the Machine informer still shows the deleted server running.
	setFailureDomains("fd1")
	lag.freeze()
	result := runPass(t, r, kcp)
	if _, got := liveServers(t, ns); len(got) != 1 {
		t.Fatalf("a pass whose Machine list lagged behind the deletion of %v deleted more: %v are being deleted", deleting, got)
	}
	if result.RequeueAfter == 0 {
		t.Errorf("a pass that waited for its Machine list asked for no wake-up")
	}

	// Caught up, the pass sees the deletion and waits for it, as preflight says.
	lag.catchUp()
	runPass(t, r, kcp)
	if _, got := liveServers(t, ns); len(got) != 1 || got[0] != deleting[0] {
		t.Fatalf("servers being deleted once the Machine list caught up: %v, want %v", got, deleting)
	}
}
