package controlplane

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/secret"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/certexpiry"
)

// A CA nearing its end is reported, never renewed: a k3s restart renews only leaf
// certificates (k3s pkg/daemons/control/deps/deps.go) and a new server gets the same
// CAs, so neither a restart nor a replacement helps; the user rotates the CAs
// (docs/certificates.md, "Before a CA expires").

// knownCAsOf are the certificates of the cluster's CA Secrets (every certificate of
// tls.crt: a CA given with its chain lists them all), by subject and expiry, as a
// node's certificate monitor prints them.
func knownCAsOf(cas caSecrets) certexpiry.KnownCAs {
	out := certexpiry.KnownCAs{}
	for _, s := range cas {
		crts, err := certutil.ParseCertsPEM(s.Data[secret.TLSCrtDataName])
		if err != nil {
			continue
		}
		for _, c := range crts {
			out.Add(c.Subject.String(), c.NotAfter)
		}
	}
	return out
}

// setAuthoritiesCondition writes CertificateAuthoritiesExpiring from the soonest CA
// expiry the nodes report (s) and the CA Secrets' (authorities): True while one is
// within k3s's 365-day CA warning, with what to do. A pass that did not read the
// nodes' reports keeps what an earlier one wrote: the nodes know CAs the Secrets do
// not (those k3s made itself).
func setAuthoritiesCondition(kcp *controlplanev1.KThreesControlPlane, s certexpiry.Summary, read bool, authorities []controlplanev1.CertificateAuthorityStatus, now time.Time) {
	if !read && (authorities == nil || conditions.Has(kcp, controlplanev1.CertificateAuthoritiesExpiringCondition)) {
		return
	}
	var when time.Time
	var what string
	if read && s.CANode != "" {
		when = s.CAExpiry
		what = fmt.Sprintf("CA %s (listed as %s by node %s)", s.CASubject, s.CA, s.CANode)
	}
	for _, a := range authorities {
		if when.IsZero() || a.NotAfter.Time.Before(when) {
			when, what = a.NotAfter.Time, "CA Secret "+a.SecretName
		}
	}
	cond := metav1.Condition{Type: controlplanev1.CertificateAuthoritiesExpiringCondition}
	if when.IsZero() || !when.Before(now.Add(certexpiry.CAWarnDays*24*time.Hour)) {
		cond.Status, cond.Reason = metav1.ConditionFalse, controlplanev1.CertificateAuthoritiesNotExpiringReason
		cond.Message = fmt.Sprintf("No cluster CA expires within %d days", certexpiry.CAWarnDays)
		conditions.Set(kcp, cond)
		return
	}
	cond.Status, cond.Reason = metav1.ConditionTrue, controlplanev1.CertificateAuthorityExpiringReason
	verb := "expires"
	if !when.After(now) {
		cond.Reason, verb = controlplanev1.CertificateAuthorityExpiredReason, "expired"
	}
	cond.Message = fmt.Sprintf("%s %s at %s. A k3s restart or a new server renews no CA, so capk3s does neither for it: "+
		"rotate the cluster CAs with `k3s certificate rotate-ca` and put the new CAs into the CA Secrets before then "+
		"(docs/certificates.md, \"Before a CA expires\")", what, verb, when.UTC().Format(time.RFC3339))
	conditions.Set(kcp, cond)
}
