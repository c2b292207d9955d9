package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/capk3s/capk3s/test/envtest"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// certRig is a running workload cluster (its API a fake), a management cluster with
// its SimCluster, and a machine reconciler.
type certRig struct {
	wc      *workloadCluster
	work    client.Client
	r       *machineReconciler
	cluster *clusterv1.Cluster
	sc      *simv1.SimCluster
}

func newCertRig(t *testing.T, provider *Provider, scAnnotations map[string]string) *certRig {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, clusterv1.AddToScheme, simv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	sc := &simv1.SimCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Annotations: scAnnotations}}
	provider.Client = fake.NewClientBuilder().WithScheme(scheme).WithObjects(sc).Build()
	work := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithStatusSubresource(&corev1.Node{}).Build()
	cas := map[k3smodel.CAName]k3smodel.CA{}
	for _, f := range k3smodel.CAFiles {
		cas[f.CA] = k3smodel.GeneratedCA(f.CA, time.Now().Add(-500*24*time.Hour))
	}
	key := client.ObjectKey{Namespace: "ns", Name: "c"}
	wc := &workloadCluster{key: key, onChange: func(client.ObjectKey) {}, api: &envtest.WorkloadAPIServer{}, client: work,
		members: map[string]*member{}, removed: map[string]string{}, cas: cas}
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: simv1.GroupVersion.Group, Kind: "SimCluster", Name: "c"}}}
	return &certRig{wc: wc, work: work, r: &machineReconciler{p: provider}, cluster: cluster, sc: sc}
}

// machine is a joined SimMachine with its registered Node.
func (g *certRig) machine(t *testing.T, name, role string, annotations map[string]string) *simv1.SimMachine {
	t.Helper()
	sm := &simv1.SimMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: annotations}}
	sm.Status.NodeName, sm.Status.Role = name, role
	n := node{name: name, providerID: "sim://ns/" + name, role: role, version: "v1.36.3+k3s1"}
	if err := n.register(context.Background(), g.work, g.wc); err != nil {
		t.Fatal(err)
	}
	return sm
}

func (g *certRig) events(t *testing.T) []corev1.Event {
	t.Helper()
	list := &corev1.EventList{}
	if err := g.work.List(context.Background(), list, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func (g *certRig) run(t *testing.T, sm *simv1.SimMachine) time.Duration {
	t.Helper()
	noticeRestart(sm, g.wc)
	next, err := g.r.keepCertificates(context.Background(), sm, g.wc, g.cluster)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.r.keepNodeHealth(context.Background(), sm, g.wc); err != nil {
		t.Fatal(err)
	}
	return next
}

func TestCertMonitorWritesK3sEventsAndCountsRepeats(t *testing.T) {
	t.Parallel()
	g := newCertRig(t, &Provider{CertificateCheckInterval: time.Millisecond}, nil)
	issued := time.Now().Add(-300 * 24 * time.Hour).UTC().Truncate(time.Second)
	sm := g.machine(t, "a-0", roleAgent, map[string]string{simv1.CertificatesIssuedAtAnnotation: issued.Format(time.RFC3339)})
	g.run(t, sm)
	evs := g.events(t)
	if len(evs) != 1 {
		t.Fatalf("%d Events, want 1: %v", len(evs), evs)
	}
	e := evs[0]
	expiry := issued.Add(-time.Hour).Add(365 * 24 * time.Hour).Format(time.RFC3339)
	if e.Type != corev1.EventTypeWarning || e.Reason != "CertificateExpirationWarning" || e.Count != 1 ||
		e.InvolvedObject.Kind != "Node" || e.InvolvedObject.Name != "a-0" || string(e.InvolvedObject.UID) != "a-0" ||
		e.Source.Component != "k3s-cert-monitor" || e.Source.Host != "a-0" || !strings.HasPrefix(e.Name, "a-0.") {
		t.Errorf("Event = %+v", e)
	}
	if !strings.Contains(e.Message, "kubelet/client-kubelet.crt: certificate CN=system:node:a-0,O=system:nodes will expire within 120 days at "+expiry) {
		t.Errorf("message %q does not give the kubelet certificate's expiry %s", e.Message, expiry)
	}
	if c := conditions.Get(sm, certificatesCondition); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, expiry) {
		t.Errorf("Certificates condition = %v, want True with %s", c, expiry)
	}

	// The next check records the same Event again: counted on the same object.
	time.Sleep(2 * time.Millisecond)
	g.run(t, sm)
	evs = g.events(t)
	// (Timestamps are whole seconds, so lastTimestamp may equal firstTimestamp.)
	if len(evs) != 1 || evs[0].Count != 2 || evs[0].LastTimestamp.Before(&evs[0].FirstTimestamp) {
		t.Errorf("after a second check: %d Events, count %d; want 1 counted twice", len(evs), evs[0].Count)
	}

	// k3s restarts (held stopped, then running): the agent's certificates are signed
	// anew, and the first check after the start says OK.
	sm.Annotations[simv1.NodeReadyAnnotation] = simv1.NodeReadyUnknown
	g.run(t, sm)
	if n := len(g.events(t)); n != 1 {
		t.Errorf("a stopped k3s recorded Events: %d", n)
	}
	sm.Annotations[simv1.NodeReadyAnnotation] = simv1.NodeReadyTrue
	g.run(t, sm)
	var ok int
	for _, e := range g.events(t) {
		if e.Reason == "CertificateExpirationOK" && e.Type == corev1.EventTypeNormal {
			ok++
		}
	}
	if ok != 1 {
		t.Errorf("%d CertificateExpirationOK Events after the restart, want 1: %v", ok, g.events(t))
	}
	if soon := k3smodel.Soonest(g.wc.leavesOf("a-0")); soon.Before(time.Now().Add(364 * 24 * time.Hour)) {
		t.Errorf("after the restart the soonest certificate expires %s, want a year from now", soon)
	}
}

func TestCertMonitorWaitsForItsPeriod(t *testing.T) {
	t.Parallel()
	g := newCertRig(t, &Provider{}, nil)
	sm := g.machine(t, "a-0", roleAgent, nil)
	next := g.run(t, sm)
	if next < 29*time.Minute || next > 30*time.Minute {
		t.Errorf("next look in %s, want k3s's 30 minutes", next)
	}
	g.run(t, sm)
	if evs := g.events(t); len(evs) != 1 || evs[0].Reason != "CertificateExpirationOK" {
		t.Errorf("Events = %v, want one OK from the first check only", evs)
	}
}

func TestCertCheckIntervalAnnotation(t *testing.T) {
	t.Parallel()
	g := newCertRig(t, &Provider{CertificateCheckInterval: time.Hour}, map[string]string{simv1.CertificateCheckIntervalAnnotation: "2s"})
	sm := g.machine(t, "a-0", roleAgent, nil)
	if next := g.run(t, sm); next > 2*time.Second || next < time.Second {
		t.Errorf("next look in %s, want the SimCluster's 2s", next)
	}
	bad := newCertRig(t, &Provider{}, map[string]string{simv1.CertificateCheckIntervalAnnotation: "soon"})
	sm = bad.machine(t, "a-0", roleAgent, nil)
	if next := bad.run(t, sm); next < 29*time.Minute {
		t.Errorf("with a bad annotation the next look is in %s, want k3s's 30 minutes", next)
	}
	if c := conditions.Get(sm, certificatesCondition); c == nil || c.Reason != invalidCheckIntervalReason || !strings.Contains(c.Message, `"soon"`) {
		t.Errorf("Certificates condition = %v, want %s naming the value", c, invalidCheckIntervalReason)
	}
}

func TestCertificatesIssuedAtAppliesOnceAndRefusesBadValues(t *testing.T) {
	t.Parallel()
	g := newCertRig(t, &Provider{}, nil)
	sm := g.machine(t, "s-0", roleServer, nil)
	g.run(t, sm)
	booted := g.wc.leavesOf("s-0")
	sm.Annotations = map[string]string{simv1.CertificatesIssuedAtAnnotation: "last year"}
	g.run(t, sm)
	if c := conditions.Get(sm, certificatesCondition); c == nil || c.Reason != invalidIssuedAtReason {
		t.Errorf("Certificates condition = %v, want %s", c, invalidIssuedAtReason)
	}
	if got := g.wc.leavesOf("s-0"); !got[0].NotAfter.Equal(booted[0].NotAfter) {
		t.Errorf("a bad annotation changed the certificates")
	}
	issued := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	sm.Annotations[simv1.CertificatesIssuedAtAnnotation] = issued.Format(time.RFC3339)
	g.run(t, sm)
	want := issued.Add(-time.Hour).Add(365 * 24 * time.Hour)
	if got := k3smodel.Soonest(g.wc.leavesOf("s-0")); !got.Equal(want) {
		t.Errorf("soonest expiry %s, want %s", got, want)
	}
	// A restart renews; the same annotation value is not applied again.
	g.wc.restartK3s("s-0", time.Now())
	g.run(t, sm)
	if got := k3smodel.Soonest(g.wc.leavesOf("s-0")); got.Equal(want) {
		t.Error("the annotation was applied again after a restart")
	}
}

func TestExpiredKubeletCertificateStopsTheNodesStatus(t *testing.T) {
	t.Parallel()
	g := newCertRig(t, &Provider{CertificateCheckInterval: time.Millisecond}, nil)
	issued := time.Now().Add(-400 * 24 * time.Hour)
	sm := g.machine(t, "s-0", roleServer, map[string]string{simv1.CertificatesIssuedAtAnnotation: issued.Format(time.RFC3339)})
	g.wc.members["s-0"] = &member{name: "s-0-x", up: true}
	g.run(t, sm)
	n := &corev1.Node{}
	if err := g.work.Get(context.Background(), client.ObjectKey{Name: "s-0"}, n); err != nil {
		t.Fatal(err)
	}
	if c := nodeCondition(n, corev1.NodeReady); c == nil || c.Status != corev1.ConditionUnknown {
		t.Errorf("Ready = %v, want Unknown", c)
	}
	if c := conditions.Get(sm, nodeReadyCondition); c == nil || c.Reason != nodeKubeletCertExpiredReason {
		t.Errorf("NodeReady condition = %v, want %s", c, nodeKubeletCertExpiredReason)
	}
	if !g.wc.members["s-0"].up {
		t.Error("the etcd member went down; k3s runs on")
	}
	if evs := g.events(t); len(evs) != 0 {
		t.Errorf("the monitor wrote with an expired kubelet certificate: %v", evs)
	}
}
