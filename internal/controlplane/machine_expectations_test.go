package controlplane

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/test/builder"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/token"
)

// laggingMachines is a client whose Machine lists can be frozen: while frozen, a list
// answers from the Machines as they were when frozen, as an informer that has received
// no Machine event since; every other read and every write reaches the apiserver, as
// the other informers and the writes of a manager that have caught up.
type laggingMachines struct {
	client.Client
	mu     sync.Mutex
	frozen []clusterv1.Machine
}

func newLaggingMachines() *laggingMachines {
	return &laggingMachines{Client: env.Client}
}

func (c *laggingMachines) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	machines, ok := list.(*clusterv1.MachineList)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ok || c.frozen == nil {
		return c.Client.List(ctx, list, opts...)
	}
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	machines.Items = nil
	for _, m := range c.frozen {
		if (o.Namespace == "" || m.Namespace == o.Namespace) && (o.LabelSelector == nil || o.LabelSelector.Matches(labels.Set(m.Labels))) {
			machines.Items = append(machines.Items, *m.DeepCopy())
		}
	}
	return nil
}

// freeze makes Machine lists answer from the Machines as they are now.
func (c *laggingMachines) freeze(t *testing.T) {
	t.Helper()
	all := &clusterv1.MachineList{}
	if err := c.Client.List(context.Background(), all); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen = append([]clusterv1.Machine{}, all.Items...)
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
	r := &Reconciler{Client: c, APIReader: env.Client, ClusterCache: workloadIsManagement{}}
	r.initMemory()
	return r
}

func runPass(t *testing.T, r *Reconciler, kcp *controlplanev1.KThreesControlPlane) ctrl.Result {
	t.Helper()
	result, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(kcp)})
	if err != nil {
		t.Fatal(err)
	}
	return result
}

// passUntilGone runs a pass of a control plane being deleted: the pass that releases
// the finalizer finds no control plane left to write the status of.
func passUntilGone(t *testing.T, r *Reconciler, kcp *controlplanev1.KThreesControlPlane) {
	t.Helper()
	_, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(kcp)})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
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

// newLaggingControlPlane is a control plane (one server wanted) whose passes have made
// the cluster's CAs and token, with a Machine cache frozen before its first server:
// setting the endpoint lets the next pass create the server.
func newLaggingControlPlane(t *testing.T) (*controlplanev1.KThreesControlPlane, *laggingMachines, *Reconciler) {
	t.Helper()
	ns := env.NewNamespace(t)
	createInfraTemplate(t, ns)
	cluster, kcp := newClusterWithControlPlane(t, ns, false)
	lag := newLaggingMachines()
	r := expectationsReconciler(lag)
	// Without an endpoint the passes stop after the CAs and the token.
	passesUntilToken(t, r, cluster, kcp)
	lag.freeze(t)
	setEndpoint(t, cluster)
	return kcp, lag, r
}

func passesUntilToken(t *testing.T, r *Reconciler, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane) {
	t.Helper()
	key := client.ObjectKey{Namespace: cluster.Namespace, Name: token.SecretName(cluster.Name)}
	for pass := 1; pass <= 5; pass++ {
		runPass(t, r, kcp)
		if err := env.Client.Get(context.Background(), key, &corev1.Secret{}); err == nil {
			return
		}
	}
	t.Fatal("no pass made the join token")
}

func setEndpoint(t *testing.T, cluster *clusterv1.Cluster) {
	t.Helper()
	cluster.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "127.0.0.1", Port: 6443}
	etcdMust(t, env.Client.Update(context.Background(), cluster))
}

// A pass whose Machine list does not show yet the server the previous pass created
// must not create another: for k3s a second server is a second etcd member. Once the
// list shows it, passes go on as usual.
func TestAPassDoesNotCreateAServerItsCacheDoesNotShowYet(t *testing.T) {
	kcp, lag, r := newLaggingControlPlane(t)
	ns := kcp.Namespace

	runPass(t, r, kcp)
	created, _ := liveServers(t, ns)
	if len(created) != 1 {
		t.Fatalf("servers after the first pass with an endpoint: %v, want one", created)
	}

	// The Machine cache lags behind the creation; the control plane's does not.
	result := runPass(t, r, kcp)
	if got, _ := liveServers(t, ns); len(got) != 1 {
		t.Fatalf("a pass whose Machine list lagged behind the creation of %v made another server: %v", created, got)
	}
	if result.RequeueAfter == 0 {
		t.Errorf("a pass that waited for its Machine list asked for no wake-up")
	}

	lag.catchUp()
	runPass(t, r, kcp)
	if got, _ := liveServers(t, ns); len(got) != 1 {
		t.Fatalf("servers once the Machine list caught up: %v, want %v", got, created)
	}
	if got := readControlPlane(t, kcp); ptr.Deref(got.Status.Replicas, 0) != 1 {
		t.Errorf("status.replicas = %v once the Machine list caught up, want 1", got.Status.Replicas)
	}
	requireNoExpectations(t, r, kcp)
}

// A control plane being deleted must not release its finalizer on a Machine list
// that does not show the server it created a moment ago: that server would keep its
// etcd hook with no one left to release it.
func TestADeletedControlPlaneWaitsForTheServerItsCacheDoesNotShowYet(t *testing.T) {
	ctx := context.Background()
	kcp, lag, r := newLaggingControlPlane(t)
	runPass(t, r, kcp)
	if got, _ := liveServers(t, kcp.Namespace); len(got) != 1 {
		t.Fatalf("servers after the first pass with an endpoint: %v, want one", got)
	}
	etcdMust(t, env.Client.Delete(ctx, kcp))

	passUntilGone(t, r, kcp)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(kcp), &controlplanev1.KThreesControlPlane{}); err != nil {
		t.Fatalf("the control plane went while it still had a server (Get = %v)", err)
	}

	// Caught up, the server is deleted, then the control plane goes, and with it what
	// was remembered about it.
	lag.catchUp()
	for pass := 1; pass <= 5; pass++ {
		passUntilGone(t, r, kcp)
	}
	if got, _ := liveServers(t, kcp.Namespace); len(got) != 0 {
		t.Errorf("servers left after the control plane's deletion: %v", got)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(kcp), &controlplanev1.KThreesControlPlane{}); !apierrors.IsNotFound(err) {
		t.Errorf("the control plane is still there once its server is gone (Get = %v)", err)
	}
	requireNoExpectations(t, r, kcp)
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
	passesUntilToken(t, r, cluster, kcp)

	kcp = readControlPlane(t, kcp)
	kcp.Spec.Replicas = ptr.To[int32](2)
	etcdMust(t, env.Client.Update(ctx, kcp))
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
	setFailureDomains("fd1", "fd2")
	lag.freeze(t)
	setEndpoint(t, cluster)

	// A pass scales down: the victim comes from fd1, which has the most servers.
	runPass(t, r, kcp)
	_, deleting := liveServers(t, ns)
	if len(deleting) != 1 || deleting[0] == "a" {
		t.Fatalf("servers being deleted after the scale-down: %v, want b or c", deleting)
	}

	// fd2 is retired; the Machine cache still shows the deleted server running.
	setFailureDomains("fd1")
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
	requireNoExpectations(t, r, kcp)
}

func requireNoExpectations(t *testing.T, r *Reconciler, kcp *controlplanev1.KThreesControlPlane) {
	t.Helper()
	r.expectations.mu.Lock()
	defer r.expectations.mu.Unlock()
	if w, ok := r.expectations.byControlPlane[client.ObjectKeyFromObject(kcp)]; ok {
		t.Errorf("expectations left once the Machine list caught up: %+v", *w)
	}
}

// What the API server contradicts is dropped, so that no pass waits for an event
// that will never come; what it confirms holds the pass back.
func TestMachinesLagDropsWhatTheAPIServerContradicts(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster, kcp := newClusterWithControlPlane(t, ns, true)
	server := func(name string, mutate ...func(*clusterv1.Machine)) *clusterv1.Machine {
		m := desiredMachine(kcp, cluster, name, "", clusterv1.ContractVersionedObjectReference{
			APIGroup: builder.BootstrapGroupVersion.Group, Kind: builder.GenericBootstrapConfigKind, Name: name,
		}, clusterv1.ContractVersionedObjectReference{
			APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineKind, Name: name,
		})
		for _, f := range mutate {
			f(m)
		}
		etcdMust(t, env.Client.Create(ctx, m))
		return m
	}
	orphan := server("orphan", func(m *clusterv1.Machine) { m.OwnerReferences = nil })
	mine := server("mine")
	kept := server("kept")
	leaving := server("leaving", func(m *clusterv1.Machine) { m.Finalizers = []string{clusterv1.MachineFinalizer} })
	t.Cleanup(func() {
		_ = env.Client.Patch(ctx, leaving, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))
	})
	etcdMust(t, env.Client.Delete(ctx, leaving))
	key := client.ObjectKeyFromObject(kcp)

	for _, tc := range []struct {
		name    string
		record  func(*machineExpectations)
		listed  []*clusterv1.Machine
		wantLag bool
	}{
		{name: "created, then deleted by someone", record: func(e *machineExpectations) { e.created(key, "gone") }},
		{name: "created, then orphaned", record: func(e *machineExpectations) { e.created(key, orphan.Name) }},
		{name: "created, not listed yet", record: func(e *machineExpectations) { e.created(key, mine.Name) }, wantLag: true},
		{name: "created and listed", record: func(e *machineExpectations) { e.created(key, mine.Name) }, listed: []*clusterv1.Machine{mine}},
		{name: "deleted, but the API server has it running", record: func(e *machineExpectations) { e.deleted(key, kept) }, listed: []*clusterv1.Machine{kept}},
		{name: "deleted, listed running", record: func(e *machineExpectations) { e.deleted(key, leaving) }, listed: []*clusterv1.Machine{leaving}, wantLag: true},
		{name: "deleted and gone from the list", record: func(e *machineExpectations) { e.deleted(key, leaving) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{Client: env.Client, APIReader: env.Client}
			r.initMemory()
			tc.record(r.expectations)
			lag, err := r.machinesLag(ctx, cluster, kcp, collections.FromMachines(tc.listed...))
			if err != nil {
				t.Fatal(err)
			}
			if (lag != "") != tc.wantLag {
				t.Errorf("lag = %q, want a lag: %v", lag, tc.wantLag)
			}
			_, remembered := r.expectations.byControlPlane[key]
			if remembered != tc.wantLag {
				t.Errorf("still remembered: %v, want %v", remembered, tc.wantLag)
			}
		})
	}

	// A Reconciler built without SetupWithManager remembers nothing and never waits.
	r := &Reconciler{Client: env.Client}
	r.expectations.created(key, mine.Name)
	if lag, err := r.machinesLag(ctx, cluster, kcp, collections.New()); lag != "" || err != nil {
		t.Errorf("without expectations: lag %q, err %v; want neither", lag, err)
	}
}
