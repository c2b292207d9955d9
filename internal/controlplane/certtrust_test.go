package controlplane

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/certexpiry"
	"github.com/capk3s/capk3s/internal/k3s"
)

// Events about a node that k3s's certificate monitor on that node did not write (another
// node's kubelet, a chart's service account) are not its report: they set no date, and
// the condition says they were ignored. k3s's own Event still counts.
func TestCertificateExpiryForgedEventsChangeNothing(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster, kcp, _ := threeServerControlPlane(t, ns)
	node := ns + "-s1"
	nodeFor(t, getMachine(t, ns, "s1"), node)
	n := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	soon := time.Now().Add(5 * 24 * time.Hour).UTC().Truncate(time.Second)
	forged := leafWarning("kubelet/client-kubelet.crt: certificate CN=system:node:s1,O=system:nodes will expire within 120 days at " + soon.Format(time.RFC3339))
	at := time.Now().Add(-time.Minute).Truncate(time.Second)
	for i, change := range []func(*corev1.Event){
		// Written with k3s's source but from no node (kubectl, a chart's account).
		func(e *corev1.Event) { e.Source.Host, e.ReportingInstance = "", "" },
		// Another node's kubelet credentials, writing about this node.
		func(e *corev1.Event) { e.Source.Host, e.ReportingInstance = ns+"-s2", ns+"-s2" },
		// About the Node object by its UID: k3s puts the node's name there.
		func(e *corev1.Event) { e.InvolvedObject.UID = n.UID },
		// A writer that did not copy the reporting fields.
		func(e *corev1.Event) { e.ReportingController, e.ReportingInstance = "", "" },
	} {
		certEvent(t, node, certexpiry.ReasonLeafWarning, forged, at.Add(time.Duration(i)*time.Second), change)
	}
	got := certPass(t, cluster, kcp)
	if a, has := getMachine(t, ns, "s1").Annotations[clusterv1.MachineCertificatesExpiryDateAnnotation]; has {
		t.Errorf("forged Events set the certificates-expiry annotation to %q", a)
	}
	c := conditions.Get(got, controlplanev1.CertificatesExpiringCondition)
	if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "ignored an Event CertificateExpirationWarning about node "+node) ||
		!strings.Contains(c.Message, "and 1 more") {
		t.Errorf("CertificatesExpiring = %+v, want False, saying the forged Events were ignored", c)
	}

	// k3s's own warning is read.
	k3sCertEvent(t, node, certexpiry.ReasonLeafWarning, forged, at.Add(10*time.Second))
	certPass(t, cluster, kcp)
	if a := getMachine(t, ns, "s1").Annotations[clusterv1.MachineCertificatesExpiryDateAnnotation]; a != soon.Format(time.RFC3339) {
		t.Errorf("k3s's own warning: certificates-expiry = %q, want %s", a, soon.Format(time.RFC3339))
	}
}

// A leaf date earlier than its Machine's creation is no certificate of that machine:
// it is ignored.
func TestCertificateExpiryBeforeTheMachineExistedIsIgnored(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster, kcp, _ := threeServerControlPlane(t, ns)
	nodeFor(t, getMachine(t, ns, "s1"), ns+"-s1")
	k3sCertEvent(t, ns+"-s1", certexpiry.ReasonLeafWarning,
		leafWarning("kubelet/client-kubelet.crt: certificate CN=system:node:s1,O=system:nodes expired at 2020-01-01T00:00:00Z"), time.Now().Truncate(time.Second))
	got := certPass(t, cluster, kcp)
	if a, has := getMachine(t, ns, "s1").Annotations[clusterv1.MachineCertificatesExpiryDateAnnotation]; has {
		t.Errorf("an impossible date was written: %q", a)
	}
	if c := conditions.Get(got, controlplanev1.CertificatesExpiringCondition); c == nil || c.Status != metav1.ConditionFalse ||
		!strings.Contains(c.Message, "before its Machine was created") {
		t.Errorf("CertificatesExpiring = %+v, want False, naming the ignored report", c)
	}
}

// observeReports runs the pass's reading of the nodes' certificate reports on the
// renewal fixture (its Nodes, the test apiserver's Events) and stores the annotations,
// as a pass before the renewal's would. cas are the CA Secrets' certificates.
func (f *renewalFixture) observeReports(t *testing.T, cas certexpiry.KnownCAs) {
	t.Helper()
	ctx := context.Background()
	r := f.reconciler()
	r.ClusterCache = renewalWorkload{c: f.workload}
	seen := &observed{nodes: f.nodes, caCerts: cas}
	var err error
	if seen.machines, err = r.controlPlaneMachines(ctx, f.cluster, f.kcp); err != nil {
		t.Fatal(err)
	}
	r.observeCertificateExpiry(ctx, f.cluster, f.kcp, seen)
	setCertificatesStatus(f.kcp, *seen)
}

// k3s lists a CA that expires within 120 days under every leaf file it signs. A
// restart renews leaves, never a CA: no node is restarted or replaced for it, and the
// control plane says which CA expires when, and what to do.
func TestCertificateRenewalCAExpiryRestartsNothing(t *testing.T) {
	f := newRenewalFixture(t, 3, coversVersion())
	caExpiry := time.Now().Add(10 * 24 * time.Hour).UTC().Truncate(time.Second)
	at := time.Now().Add(-time.Minute).Truncate(time.Second)
	first := true
	for _, n := range f.nodes {
		// The client CA capk3s made (CN=kubernetes), after the leaf in two files.
		k3sCertEvent(t, n.Name, certexpiry.ReasonLeafWarning, leafWarning(
			"kubelet/client-kubelet.crt: certificate CN=kubernetes will expire within 120 days at "+caExpiry.Format(time.RFC3339),
			"admin/client-admin.crt: certificate CN=kubernetes will expire within 120 days at "+caExpiry.Format(time.RFC3339)), at)
		if first {
			// One server's CA warning reports it too.
			k3sCertEvent(t, n.Name, certexpiry.ReasonCAWarning, certexpiry.CALead+
				"certificate-authority/client-ca.crt: certificate CN=kubernetes will expire within 365 days at "+caExpiry.Format(time.RFC3339), at.Add(time.Second))
			first = false
		}
	}
	// The client CA's Secret holds it: that, not a node's report, makes it a CA.
	crt, _ := testCAWithSubject(t, "kubernetes", caExpiry)
	cas := knownCAsOf(caSecrets{k3s.ClientCA: {Data: map[string][]byte{secret.TLSCrtDataName: crt}}})
	for range 2 {
		f.observeReports(t, cas)
		f.renewalPass(t)
	}
	for name, m := range f.servers(t) {
		if a, has := m.Annotations[clusterv1.MachineCertificatesExpiryDateAnnotation]; has {
			t.Errorf("Machine %s got the CA's date as its certificates' expiry: %q", name, a)
		}
	}
	if plans, marked := restartPlans(t, f.kcp.Namespace), renewingMarks(t, f.kcp.Namespace); len(plans)+len(marked) != 0 {
		t.Errorf("a CA's expiry restarted nodes: Plans for %v, marked %v", planNames(plans), marked)
	}
	if n := len(f.servers(t)); n != 3 {
		t.Errorf("%d servers, want the 3 kept: a CA's expiry replaces none", n)
	}
	c := conditions.Get(f.kcp, controlplanev1.CertificateAuthoritiesExpiringCondition)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != controlplanev1.CertificateAuthorityExpiringReason ||
		!strings.Contains(c.Message, "CA CN=kubernetes") || !strings.Contains(c.Message, caExpiry.Format(time.RFC3339)) ||
		!strings.Contains(c.Message, "k3s certificate rotate-ca") {
		t.Errorf("CertificateAuthoritiesExpiring = %+v, want True naming the CA, its date and the rotation", c)
	}
	if c := conditions.Get(f.kcp, controlplanev1.CertificatesExpiringCondition); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("CertificatesExpiring = %+v, want False: no leaf expires", c)
	}
}

// Any Event writer can copy a leaf's subject and date from the readable Events into a
// CA warning that passes every check of its fields. A node's CA warning names no CA:
// the leaf is still renewed, and the forged line is only reported.
func TestCertificateRenewalForgedCAWarningHidesNoLeaf(t *testing.T) {
	f := newRenewalFixture(t, 3, coversVersion())
	soon := time.Now().Add(10 * 24 * time.Hour).UTC().Truncate(time.Second)
	at := time.Now().Add(-time.Minute).Truncate(time.Second)
	var names []string
	for name := range f.servers(t) {
		names = append(names, name)
	}
	sort.Strings(names)
	victim, other := f.kcp.Namespace+"-"+names[0], f.kcp.Namespace+"-"+names[1]
	leaf := "certificate CN=system:node:" + victim + ",O=system:nodes will expire within 120 days at " + soon.Format(time.RFC3339)
	k3sCertEvent(t, victim, certexpiry.ReasonLeafWarning, leafWarning("kubelet/client-kubelet.crt: "+leaf), at)
	// Written with every field as k3s writes it, by another node's credentials.
	k3sCertEvent(t, other, certexpiry.ReasonCAWarning, certexpiry.CALead+"certificate-authority/client-ca.crt: "+
		strings.Replace(leaf, "within 120 days", "within 365 days", 1), at)
	f.observeReports(t, certexpiry.KnownCAs{})
	if a := getMachine(t, f.kcp.Namespace, names[0]).Annotations[clusterv1.MachineCertificatesExpiryDateAnnotation]; a != soon.Format(time.RFC3339) {
		t.Errorf("certificates-expiry of the leaf's Machine = %q, want %s: a forged CA warning hid the leaf", a, soon.Format(time.RFC3339))
	}
}
