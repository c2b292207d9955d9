package controlplane

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/jsonpath"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/test/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/certexpiry"
	"github.com/capk3s/capk3s/internal/workload"
)

// k3sCertEvent records a certificate-monitor Event as k3s's recorder does
// (pkg/certmonitor/certmonitor.go, util.BuildControllerEventRecorder, client-go's
// tools/record): core/v1, in "default", named "<node>.<nanoseconds in hex>", about
// {Kind: Node, Name: <node>, UID: <node>}, from source "k3s-cert-monitor" on host
// <node>, which client-go copies into reportingController and reportingInstance.
func k3sCertEvent(t *testing.T, node, reason, message string, at time.Time) {
	t.Helper()
	certEvent(t, node, reason, message, at, nil)
}

// certEvent records an Event as k3sCertEvent does, changed by change first (a forger's).
func certEvent(t *testing.T, node, reason, message string, at time.Time, change func(*corev1.Event)) {
	t.Helper()
	typ := corev1.EventTypeWarning
	if reason == certexpiry.ReasonOK {
		typ = corev1.EventTypeNormal
	}
	e := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: fmt.Sprintf("%s.%x", node, at.UnixNano())},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: node, UID: types.UID(node)},
		Reason:         reason, Message: message, Type: typ, Count: 1,
		Source:         corev1.EventSource{Component: certexpiry.Source, Host: node},
		FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at),
		ReportingController: certexpiry.Source, ReportingInstance: node,
	}
	if change != nil {
		change(e)
	}
	if err := env.Client.Create(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

func leafWarning(lines ...string) string {
	return "Node certificates require attention - restart k3s on this node to trigger automatic rotation: " + strings.Join(lines, "\n")
}

// nodeFor creates a Ready Node in the test apiserver (the workload cluster here) and
// points the Machine at it.
func nodeFor(t *testing.T, m *clusterv1.Machine, node string) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := env.Client.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if err := env.Client.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
	m.Status.NodeRef = clusterv1.MachineNodeReference{Name: node}
	if err := env.Client.Status().Update(ctx, m); err != nil {
		t.Fatal(err)
	}
}

// certPass runs what a pass does for certificates on a control plane whose workload
// cluster is the test apiserver, and stores the status as the pass's status write does.
func certPass(t *testing.T, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane) *controlplanev1.KThreesControlPlane {
	t.Helper()
	ctx := context.Background()
	r := &Reconciler{Client: env.Client, ClusterCache: workloadIsManagement{}}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(kcp), kcp); err != nil {
		t.Fatal(err)
	}
	machines, err := r.controlPlaneMachines(ctx, cluster, kcp)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := workload.NodesOf(ctx, r.ClusterCache, client.ObjectKeyFromObject(cluster), machines)
	if err != nil {
		t.Fatal(err)
	}
	seen := &observed{machines: machines, nodes: nodes}
	r.observeCertificateExpiry(ctx, cluster, kcp, seen)
	setCertificatesStatus(kcp, *seen)
	if err := env.Client.Status().Update(ctx, kcp); err != nil {
		t.Fatal(err)
	}
	got := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(kcp), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// printed is what `kubectl get` shows in the CRD's column of that name.
func printed(t *testing.T, kcp *controlplanev1.KThreesControlPlane, column string) string {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "kthreescontrolplanes.controlplane.cluster.x-k8s.io"}, crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != controlplanev1.GroupVersion.Version {
			continue
		}
		for _, c := range v.AdditionalPrinterColumns {
			if c.Name != column {
				continue
			}
			obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(kcp)
			if err != nil {
				t.Fatal(err)
			}
			jp := jsonpath.New(column).AllowMissingKeys(true)
			if err := jp.Parse("{" + c.JSONPath + "}"); err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			if err := jp.Execute(&out, obj); err != nil {
				t.Fatal(err)
			}
			return out.String()
		}
	}
	t.Fatalf("no column %q", column)
	return ""
}

// k3s's certificate-monitor Events on the workload cluster become the Machines'
// certificates-expiry annotation (servers and agents), status.certificates, the
// printed column and CertificatesExpiring; an OK after k3s restarted clears them.
func TestCertificateExpiryIsReadFromK3sEvents(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster, kcp, _ := threeServerControlPlane(t, ns)
	for _, name := range []string{"s1", "s2", "s3"} {
		nodeFor(t, getMachine(t, ns, name), ns+"-"+name)
	}
	worker := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w1", Labels: map[string]string{clusterv1.ClusterNameLabel: cluster.Name}},
		Spec: clusterv1.MachineSpec{ClusterName: cluster.Name,
			Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: builder.BootstrapGroupVersion.Group, Kind: builder.GenericBootstrapConfigKind, Name: "w1"}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineKind, Name: "w1"}},
	}
	if err := env.Client.Create(ctx, worker); err != nil {
		t.Fatal(err)
	}
	nodeFor(t, worker, ns+"-w1")

	// Nothing reported yet: no annotation, nothing expiring.
	got := certPass(t, cluster, kcp)
	if c := conditions.Get(got, controlplanev1.CertificatesExpiringCondition); c == nil || c.Status != metav1.ConditionFalse {
		t.Fatalf("CertificatesExpiring before any warning = %+v, want False", c)
	}

	checked := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	k3sCertEvent(t, ns+"-s1", certexpiry.ReasonLeafWarning, leafWarning(
		"kubelet/client-kubelet.crt: certificate CN=system:node:s1,O=system:nodes will expire within 120 days at 2027-03-01T10:00:00Z"), checked)
	k3sCertEvent(t, ns+"-s2", certexpiry.ReasonLeafWarning, leafWarning(
		"kube-proxy/client-kube-proxy.crt: certificate CN=system:kube-proxy will expire within 120 days at 2027-02-01T10:00:00+01:00",
		"api-server/serving-kube-apiserver.crt: certificate CN=kube-apiserver will expire within 120 days at 2027-02-10T00:00:00Z"), checked)
	k3sCertEvent(t, ns+"-w1", certexpiry.ReasonLeafWarning, leafWarning(
		"kubelet/client-kubelet.crt: certificate CN=system:node:w1,O=system:nodes will expire within 120 days at 2027-01-15T00:00:00Z"), checked)
	k3sCertEvent(t, ns+"-s3", certexpiry.ReasonOK, "Node and Certificate Authority certificates managed by k3s are OK", checked)

	got = certPass(t, cluster, kcp)
	for name, want := range map[string]string{"s1": "2027-03-01T10:00:00Z", "s2": "2027-02-01T09:00:00Z", "s3": "", "w1": "2027-01-15T00:00:00Z"} {
		if a := getMachine(t, ns, name).Annotations[clusterv1.MachineCertificatesExpiryDateAnnotation]; a != want {
			t.Errorf("Machine %s: certificates-expiry = %q, want %q", name, a, want)
		}
	}
	st := got.Status.Certificates
	if st == nil || st.SoonestExpiry == nil || !st.SoonestExpiry.Time.Equal(time.Date(2027, 1, 15, 0, 0, 0, 0, time.UTC)) ||
		st.NodeName != ns+"-w1" || st.MachineName != "w1" || st.Certificate != "kubelet/client-kubelet.crt" {
		t.Errorf("status.certificates = %+v, want the agent w1's kubelet certificate at 2027-01-15", st)
	}
	if col := printed(t, got, "Certificates-Expiry"); col != "2027-01-15T00:00:00Z" {
		t.Errorf("Certificates-Expiry column = %q", col)
	}
	if col := printed(t, got, "Certificates-Node"); col != ns+"-w1" {
		t.Errorf("Certificates-Node column = %q", col)
	}
	c := conditions.Get(got, controlplanev1.CertificatesExpiringCondition)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != controlplanev1.CertificatesExpiringReason ||
		!strings.Contains(c.Message, "2027-01-15T00:00:00Z") || !strings.Contains(c.Message, ns+"-w1") {
		t.Errorf("CertificatesExpiring = %+v, want True with the date and the node", c)
	}

	// k3s restarted on w1 and s2: their first checks are OK. s1 keeps warning.
	k3sCertEvent(t, ns+"-w1", certexpiry.ReasonOK, "Node and Certificate Authority certificates managed by k3s are OK", checked.Add(5*time.Minute))
	k3sCertEvent(t, ns+"-s2", certexpiry.ReasonOK, "Node and Certificate Authority certificates managed by k3s are OK", checked.Add(5*time.Minute))
	got = certPass(t, cluster, kcp)
	for name, want := range map[string]string{"s1": "2027-03-01T10:00:00Z", "s2": "", "w1": ""} {
		if a, has := getMachine(t, ns, name).Annotations[clusterv1.MachineCertificatesExpiryDateAnnotation]; a != want || (want == "" && has) {
			t.Errorf("after the restarts, Machine %s: certificates-expiry = %q (present %v), want %q", name, a, has, want)
		}
	}
	if st := got.Status.Certificates; st == nil || st.NodeName != ns+"-s1" || !st.SoonestExpiry.Time.Equal(time.Date(2027, 3, 1, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("after the restarts, status.certificates = %+v, want s1's date", st)
	}
}

// What a pass that could not read the Events writes, and the expired case.
func TestSetCertificatesStatus(t *testing.T) {
	servers := collections.FromMachines(&clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "s1"}})
	soonest := metav1.NewTime(time.Date(2027, 1, 15, 0, 0, 0, 0, time.UTC))
	known := func() *controlplanev1.KThreesControlPlane {
		kcp := &controlplanev1.KThreesControlPlane{}
		kcp.Status.Certificates = &controlplanev1.CertificatesStatus{SoonestExpiry: &soonest, NodeName: "n1", MachineName: "s1"}
		return kcp
	}

	// Unreachable: Unknown, and the last soonest expiry stays.
	kcp := known()
	setCertificatesStatus(kcp, observed{machines: servers})
	if c := conditions.Get(kcp, controlplanev1.CertificatesExpiringCondition); c == nil || c.Status != metav1.ConditionUnknown ||
		c.Reason != controlplanev1.WorkloadClusterUnreachableReason {
		t.Errorf("unreachable: CertificatesExpiring = %+v, want Unknown", c)
	}
	if st := kcp.Status.Certificates; st == nil || st.SoonestExpiry == nil || st.NodeName != "n1" {
		t.Errorf("unreachable: status.certificates = %+v, want the last one kept", st)
	}

	// Expired by the management clock.
	kcp = known()
	past := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	setCertificatesStatus(kcp, observed{machines: servers, certs: certExpiry{read: true, machineOf: map[string]string{"n1": "s1"},
		summary: certexpiry.Summary{Soonest: "n1", Expiry: past, Certificate: "kubelet/client-kubelet.crt", Expired: []string{"n1"}}}})
	c := conditions.Get(kcp, controlplanev1.CertificatesExpiringCondition)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != controlplanev1.CertificatesExpiredReason ||
		c.Message != "Certificate kubelet/client-kubelet.crt of node n1 (Machine s1) expired at 2026-01-01T00:00:00Z; "+
			"restart k3s on a node within 120 days of expiry to renew its certificates; expired on nodes n1" {
		t.Errorf("expired: CertificatesExpiring = %+v", c)
	}

	// Nothing in the window any more: the soonest expiry goes, and with no CA read,
	// status.certificates with it.
	kcp = known()
	setCertificatesStatus(kcp, observed{machines: servers, certs: certExpiry{read: true}})
	if kcp.Status.Certificates != nil {
		t.Errorf("cleared: status.certificates = %+v, want none", kcp.Status.Certificates)
	}
	if c := conditions.Get(kcp, controlplanev1.CertificatesExpiringCondition); c == nil || c.Status != metav1.ConditionFalse ||
		c.Reason != controlplanev1.CertificatesNotExpiringReason {
		t.Errorf("cleared: CertificatesExpiring = %+v, want False", c)
	}
}
