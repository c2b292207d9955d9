package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util/test/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/inplace"
	"github.com/capk3s/capk3s/internal/workload"
	"github.com/capk3s/capk3s/test/envtest"
)

// renewalWorkload is a ClusterCache whose workload cluster is the test apiserver
// itself, reached through c (env.Client, or a client that hides SUC).
type renewalWorkload struct {
	clustercache.ClusterCache
	c client.Client
}

func (w renewalWorkload) GetReader(context.Context, client.ObjectKey) (client.Reader, error) {
	return w.c, nil
}

func (w renewalWorkload) GetUncachedClient(context.Context, client.ObjectKey) (client.Client, error) {
	return w.c, nil
}

// withoutSUC is a workload cluster that does not serve the Plan kind.
type withoutSUC struct{ client.Client }

func (c withoutSUC) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if u, ok := list.(*unstructured.UnstructuredList); ok && u.GroupVersionKind().Group == "upgrade.cattle.io" {
		return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "upgrade.cattle.io", Kind: "Plan"}}
	}
	return c.Client.List(ctx, list, opts...)
}

// renewalFixture is an in-place fixture (servers made by scaleUp, passes run by the
// test) whose workload cluster is the test apiserver with SUC installed, each server
// with a Node of its own name.
type renewalFixture struct {
	*inPlaceFixture
	workload client.Client
	nodes    map[string]*corev1.Node
	notReady map[string]bool
	// lastResult is what the last pass asked for; replaceWait is when it asked to be
	// woken for the next certificate replacement (Reconcile adds it to lastResult).
	lastResult  time.Duration
	replaceWait time.Duration
}

func newRenewalFixture(t *testing.T, servers int32, rc *testRuntimeClient) *renewalFixture {
	t.Helper()
	if err := envtest.InstallSystemUpgradeController(context.Background(), env.Config); err != nil {
		t.Fatal(err)
	}
	f := &renewalFixture{inPlaceFixture: newInPlaceFixture(t, servers, 1, rc), workload: env.Client,
		nodes: map[string]*corev1.Node{}, notReady: map[string]bool{}}
	f.kcp.Spec.Rollout.Before.CertificatesExpiryDays = 30
	for name := range f.servers(t) {
		f.nodes[name] = &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: f.kcp.Namespace + "-" + name, Labels: map[string]string{corev1.LabelHostname: f.kcp.Namespace + "-" + name}},
			Status: corev1.NodeStatus{
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
				NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.31.4+k3s1"},
			},
		}
		// On the API server too: a restart labels its Node there (renewal_target.go).
		createNode(t, f.nodes[name].DeepCopy())
	}
	return f
}

// createNode creates a Node in the test apiserver, with its status, removed after the test.
func createNode(t *testing.T, node *corev1.Node) {
	t.Helper()
	ctx := context.Background()
	status := node.Status
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })
	node.Status = status
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
}

// renewalPass runs one pass over the servers as the reconciler does: the Nodes, the
// renewal, the propagation (with the Machines' UpToDate), the servers' step, the status.
func (f *renewalFixture) renewalPass(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	r := f.reconciler()
	r.ClusterCache = renewalWorkload{c: f.workload}
	seen := &observed{}
	var err error
	if seen.machines, err = r.controlPlaneMachines(ctx, f.cluster, f.kcp); err != nil {
		t.Fatal(err)
	}
	seen.nodes = workload.Nodes{}
	for name, n := range f.nodes {
		if !f.notReady[name] {
			seen.nodes[name] = n
			continue
		}
		down := n.DeepCopy()
		down.Status.Conditions[0].Status = corev1.ConditionFalse
		seen.nodes[name] = down
	}
	if err := r.observeRenewal(ctx, f.cluster, f.kcp, seen); err != nil {
		t.Fatal(err)
	}
	if seen.objects, err = r.propagateWith(ctx, f.cluster, f.kcp, seen.machines, seen.renewal); err != nil {
		t.Fatal(err)
	}
	result, err := r.reconcileServers(ctx, f.cluster, f.kcp, true, seen)
	if err != nil {
		t.Fatal(err)
	}
	f.lastResult, f.replaceWait = result.RequeueAfter, seen.renewal.untilReplaceNext(time.Now())
	setStatus(f.cluster, f.kcp, *seen)
}

// expireIn writes a certificate report on the Machine, as the expiry reporter does.
func expireIn(t *testing.T, m *clusterv1.Machine, d time.Duration) time.Time {
	t.Helper()
	expiry := time.Now().Add(d).UTC().Truncate(time.Second)
	before := m.DeepCopy()
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[clusterv1.MachineCertificatesExpiryDateAnnotation] = expiry.Format(time.RFC3339)
	if err := env.Client.Patch(context.Background(), m, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	return expiry
}

// restartPlans are the restart Plans of the namespace's Machines, by Machine name.
func restartPlans(t *testing.T, ns string) map[string]*unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "upgrade.cattle.io", Version: "v1", Kind: "PlanList"})
	if err := env.Client.List(context.Background(), list, client.InNamespace(envtest.SystemUpgradeNamespace),
		client.MatchingLabels{inplace.RenewalLabel: "true"}); err != nil {
		t.Fatal(err)
	}
	out := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		if machine, ok := strings.CutPrefix(list.Items[i].GetAnnotations()[inplace.MachineAnnotation], ns+"/"); ok {
			out[machine] = &list.Items[i]
		}
	}
	return out
}

// completeRestart plays SUC finishing a restart Plan on its Node: the Plan's hash in
// its status and on the Node's label.
func completeRestart(t *testing.T, plan *unstructured.Unstructured, node *corev1.Node) {
	t.Helper()
	_ = unstructured.SetNestedField(plan.Object, "hash-1", "status", "latestHash")
	if err := env.Client.Status().Update(context.Background(), plan); err != nil {
		t.Fatal(err)
	}
	node.Labels["plan.upgrade.cattle.io/"+plan.GetName()] = "hash-1"
}

func planCommand(plan *unstructured.Unstructured) string {
	cmd, _, _ := unstructured.NestedStringSlice(plan.Object, "spec", "upgrade", "command")
	return strings.Join(cmd, " ")
}

// createAgent makes a worker Machine of the fixture's cluster with a Ready Node in the
// workload cluster, as CAPI's MachineSet and Machine controllers would leave it.
func (f *renewalFixture) createAgent(t *testing.T, name string) *clusterv1.Machine {
	t.Helper()
	ctx := context.Background()
	nodeName := f.kcp.Namespace + "-" + name
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{corev1.LabelHostname: nodeName}}}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	node.Status.NodeInfo.KubeletVersion = "v1.31.4+k3s1"
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	m := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.kcp.Namespace, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: f.cluster.Name}},
		Spec: clusterv1.MachineSpec{
			ClusterName: f.cluster.Name, Version: "v1.31.4+k3s1",
			Bootstrap: clusterv1.Bootstrap{DataSecretName: ptrString("data")},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineKind, Name: name,
			},
		},
	}
	if err := env.Client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	m.Status.NodeRef = clusterv1.MachineNodeReference{Name: nodeName}
	if err := env.Client.Status().Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	return m
}

func ptrString(s string) *string { return &s }

// machine reads a Machine live.
func getMachine(t *testing.T, ns, name string) *clusterv1.Machine {
	t.Helper()
	m := &clusterv1.Machine{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, m); err != nil {
		t.Fatal(err)
	}
	return m
}
