package realk3s

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// leafDays is the lifetime k3s gives its leaf certificates in this scenario: inside
// k3s's 120-day window (CertificateRenewDays, pkg/daemons/config/types.go, v1.36), so
// that its certificate monitor warns at once, and far from expiry, so that the
// cluster works. k3s signs leaves with rancher/dynamiclistener's cert.NewSignedCert,
// which reads CATTLE_NEW_SIGNED_CERT_EXPIRATION_DAYS from k3s's environment when the
// caller sets no lifetime (k3s never does: pkg/daemons/control/deps/deps.go for a
// server's own, pkg/server/handlers/handlers.go for those it signs for agents). CAs
// are made by other functions, which the variable does not reach.
const leafDays = 60

// serverEnvFile is where a server's k3s reads the variable: the install script's unit
// reads /etc/default/%N, /etc/sysconfig/%N and its own k3s.service.env, in that
// order. capk3s writes /etc/default/k3s itself (etcd S3 credentials) and the script
// rewrites k3s.service.env on every run, so a user's file goes to /etc/sysconfig.
const serverEnvFile = "/etc/sysconfig/k3s"

// TestCertificatesOnRealK3s: a server whose k3s signs 60-day leaf certificates (set by
// a file of the KThreesConfigSpec, as a user would), and an agent without the setting,
// whose certificates the server signs. k3s's own certificate monitor warns on both
// nodes; capk3s shows each node's date on its Machine, the soonest on the control
// plane with CertificatesExpiring, and no CA as expiring. Asked to renew servers whose
// certificates expire within 90 days, capk3s replaces the server once and holds the
// next replacement for 24 hours.
func TestCertificatesOnRealK3s(t *testing.T) {
	startStack(t)
	s := &scenario{t: t, ctx: context.Background(), ns: env.NewNamespace(t)}
	s.c = newCluster(clusterOptions{namespace: s.ns, name: "certs", servers: 1, agents: 1, version: k3sVersion})
	s.key = client.ObjectKeyFromObject(s.c.cluster)
	cp := &s.c.controlPlane.Spec.KThreesConfigSpec
	cp.Files = append(cp.Files, bootstrapv1.File{
		Path: serverEnvFile, Owner: "root:root", Permissions: "0600",
		Content: fmt.Sprintf("CATTLE_NEW_SIGNED_CERT_EXPIRATION_DAYS=%d\n", leafDays),
	})
	for _, o := range s.c.objects() {
		s.must(fmt.Sprintf("creating %T %s", o, o.GetName()), env.Client.Create(s.ctx, o))
	}
	clusterAvailable(t, s.key, 15*time.Minute)
	s.wc, s.cs = workloadClients(t, s.key)
	nodesReady(t, s.wc, 2)

	s.servingCertificateShortened()
	s.certMonitorEvents()
	s.expiryShownOnControlPlane()
	s.expiryShownOnMachines()
	s.serverReplacedOnce()
}

// servingCertificateShortened reads the certificate the server presents on 6443 (k3s's
// supervisor, whose serving certificate dynamiclistener signs with the same
// variable): the leaf lives leafDays, the CA that signed it is capk3s's, untouched.
func (s *scenario) servingCertificateShortened() {
	s.t.Helper()
	cfg := workloadConfig(s.t, s.key)
	u, err := url.Parse(cfg.Host)
	s.must("parsing the workload API address", err)
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reads the chain
	s.must("dialing the workload API server", err)
	chain := conn.ConnectionState().PeerCertificates
	_ = conn.Close()
	leaf := chain[0]
	life := leaf.NotAfter.Sub(leaf.NotBefore)
	s.t.Logf("API server certificate %s: notBefore %s notAfter %s (%.2f days)", leaf.Subject, leaf.NotBefore.UTC().Format(time.RFC3339),
		leaf.NotAfter.UTC().Format(time.RFC3339), life.Hours()/24)
	if life != leafDays*24*time.Hour {
		s.t.Errorf("the API server's certificate lives %s, want %d days", life, leafDays)
	}
	ca := s.clusterCA()
	if err := leaf.CheckSignatureFrom(ca); err != nil {
		s.t.Errorf("the API server's certificate is not signed by the cluster CA %s: %v", ca.Subject, err)
	}
	s.t.Logf("cluster CA %s: notAfter %s (%.0f days)", ca.Subject, ca.NotAfter.UTC().Format(time.RFC3339), ca.NotAfter.Sub(ca.NotBefore).Hours()/24)
	if days := time.Until(ca.NotAfter).Hours() / 24; days < 3600 {
		s.t.Errorf("the cluster CA expires in %.0f days: the variable should not shorten CAs", days)
	}
}

// clusterCA is the server CA capk3s generated (Secret <cluster>-ca).
func (s *scenario) clusterCA() *x509.Certificate {
	s.t.Helper()
	sec := &corev1.Secret{}
	s.must("reading the CA Secret", env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: s.key.Name + "-ca"}, sec))
	b, _ := pem.Decode(sec.Data["tls.crt"])
	if b == nil {
		s.t.Fatal("the CA Secret has no PEM certificate")
	}
	ca, err := x509.ParseCertificate(b.Bytes)
	s.must("parsing the cluster CA", err)
	return ca
}

// certMonitorEvents waits for k3s's certificate monitor to warn on both nodes, and
// logs exactly what it wrote.
func (s *scenario) certMonitorEvents() {
	s.t.Helper()
	caDate := s.clusterCA().NotAfter.UTC().Format(time.RFC3339)
	var warned map[string]corev1.Event
	eventually(s.t, 5*time.Minute, "k3s's certificate warnings on both nodes", func(ctx context.Context) error {
		list, err := s.cs.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		warned = map[string]corev1.Event{}
		for _, e := range list.Items {
			if e.Source.Component == "k3s-cert-monitor" && e.Reason == "CertificateExpirationWarning" {
				warned[e.InvolvedObject.Name] = e
			}
		}
		if len(warned) != 2 {
			return fmt.Errorf("warnings on %d nodes", len(warned))
		}
		return nil
	})
	for node, e := range warned {
		s.t.Logf("k3s Event on %s: name %s type %s reason %s count %d involvedObject %+v source %+v reportingController %q reportingInstance %q\nmessage: %s",
			node, e.Name, e.Type, e.Reason, e.Count, e.InvolvedObject, e.Source, e.ReportingController, e.ReportingInstance, e.Message)
		n := &corev1.Node{}
		s.must("reading Node "+node, s.wc.Get(s.ctx, client.ObjectKey{Name: node}, n))
		s.t.Logf("k3s's first report on %s at %s, its Node created at %s", node, e.FirstTimestamp.UTC().Format(time.RFC3339),
			n.CreationTimestamp.UTC().Format(time.RFC3339))
		if strings.Contains(e.Message, "-ca@") || strings.Contains(e.Message, caDate) {
			s.t.Errorf("the warning on %s lists a CA: %s", node, e.Message)
		}
	}
}

// expiryShownOnMachines waits for each Machine's certificates-expiry annotation and
// checks it is a date k3s could have written: leafDays after the node's first
// certificates were signed (no sooner than an hour before the Machine was created,
// dynamiclistener's allowance for clock skew), and not later than leafDays from now.
// The agent's k3s reports before its Machine is tied to its Node; the control plane
// must read it once it is, not at k3s's next check 30 minutes on: 2 minutes here.
func (s *scenario) expiryShownOnMachines() {
	s.t.Helper()
	start := time.Now()
	eventually(s.t, 2*time.Minute, "every Machine's certificates-expiry", func(context.Context) error {
		for _, server := range []bool{true, false} {
			for _, m := range s.machines(server) {
				v := m.Annotations[clusterv1.MachineCertificatesExpiryDateAnnotation]
				if v == "" {
					return fmt.Errorf("Machine %s has no %s yet", m.Name, clusterv1.MachineCertificatesExpiryDateAnnotation)
				}
				if server && m.Status.CertificatesExpiryDate.IsZero() {
					return fmt.Errorf("server Machine %s has no status.certificatesExpiryDate yet", m.Name)
				}
			}
		}
		return nil
	})
	s.t.Logf("every Machine shows its expiry %s after the control plane did", time.Since(start).Round(time.Second))
	for _, server := range []bool{true, false} {
		for _, m := range s.machines(server) {
			v := m.Annotations[clusterv1.MachineCertificatesExpiryDateAnnotation]
			at, err := time.Parse(time.RFC3339, v)
			if err != nil {
				s.t.Errorf("Machine %s: certificates-expiry %q: %v", m.Name, v, err)
				continue
			}
			earliest := m.CreationTimestamp.Add(leafDays*24*time.Hour - time.Hour - time.Second)
			latest := time.Now().Add(leafDays * 24 * time.Hour)
			s.t.Logf("Machine %s (server %v, created %s): certificates-expiry %s, status.certificatesExpiryDate %s", m.Name, server,
				m.CreationTimestamp.UTC().Format(time.RFC3339), v, m.Status.CertificatesExpiryDate.UTC().Format(time.RFC3339))
			if at.Before(earliest) || at.After(latest) {
				s.t.Errorf("Machine %s: certificates-expiry %s not within [%s, %s]", m.Name, v, earliest.UTC().Format(time.RFC3339), latest.UTC().Format(time.RFC3339))
			}
			if server && !m.Status.CertificatesExpiryDate.Time.Equal(at) {
				s.t.Errorf("server Machine %s: status.certificatesExpiryDate %s, annotation %s", m.Name, m.Status.CertificatesExpiryDate, v)
			}
		}
	}
}

// expiryShownOnControlPlane checks what the KThreesControlPlane says: the soonest
// expiry with its node, Machine and certificate, CertificatesExpiring True naming
// them, and no CA expiring.
func (s *scenario) expiryShownOnControlPlane() {
	s.t.Helper()
	kcp := &controlplanev1.KThreesControlPlane{}
	eventually(s.t, 3*time.Minute, "CertificatesExpiring True", func(ctx context.Context) error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s.c.controlPlane), kcp); err != nil {
			return err
		}
		c := conditions.Get(kcp, controlplanev1.CertificatesExpiringCondition)
		if c == nil || c.Status != metav1.ConditionTrue || kcp.Status.Certificates == nil || kcp.Status.Certificates.SoonestExpiry == nil {
			return fmt.Errorf("condition %v, status %+v", c, kcp.Status.Certificates)
		}
		return nil
	})
	st := kcp.Status.Certificates
	c := conditions.Get(kcp, controlplanev1.CertificatesExpiringCondition)
	s.t.Logf("KThreesControlPlane: soonestExpiry %s node %s machine %s certificate %s; CertificatesExpiring %s/%s: %s",
		st.SoonestExpiry.UTC().Format(time.RFC3339), st.NodeName, st.MachineName, st.Certificate, c.Status, c.Reason, c.Message)
	if c.Reason != controlplanev1.CertificatesExpiringReason {
		s.t.Errorf("CertificatesExpiring's reason is %s", c.Reason)
	}
	date := st.SoonestExpiry.UTC().Format(time.RFC3339)
	for _, want := range []string{date, st.NodeName, st.Certificate} {
		if want == "" || !strings.Contains(c.Message, want) {
			s.t.Errorf("CertificatesExpiring's message does not name %q: %s", want, c.Message)
		}
	}
	for _, server := range []bool{true, false} {
		for _, m := range s.machines(server) {
			s.t.Logf("Machine %s then: certificates-expiry %q", m.Name, m.Annotations[clusterv1.MachineCertificatesExpiryDateAnnotation])
		}
	}
	if st.MachineName == "" || st.NodeName == "" {
		s.t.Errorf("soonestExpiry %s names no node or Machine: %q/%q", date, st.NodeName, st.MachineName)
	}
	ca := conditions.Get(kcp, controlplanev1.CertificateAuthoritiesExpiringCondition)
	s.t.Logf("CertificateAuthoritiesExpiring: %v; authorities %+v", ca, st.Authorities)
	if ca == nil || ca.Status != metav1.ConditionFalse {
		s.t.Errorf("CertificateAuthoritiesExpiring is %v, want False: no CA was shortened", ca)
	}
	if len(st.Authorities) != 3 {
		s.t.Errorf("status.certificates.authorities lists %d CAs, want 3", len(st.Authorities))
	}
}
