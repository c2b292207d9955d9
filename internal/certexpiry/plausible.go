package certexpiry

import (
	"fmt"
	"time"
)

// issueAllowance is how much earlier than its Machine's creation a leaf certificate of
// the node may still be dated: k3s dates a certificate an hour back (dynamiclistener
// v0.7.5, cert/validity.go CalculateNotBefore), and the node's clock may be behind the
// management cluster's; a day covers that.
const issueAllowance = 25 * time.Hour

// Implausible says why n's leaf expiry cannot be that of a certificate the node holds,
// or "". Every leaf certificate of a node is signed after its machine was created: a
// server signs its own at its first start, an agent asks a server at every start
// (pkg/daemons/control/deps/deps.go, pkg/agent/config/config.go), whoever made the
// CAs; and a certificate expires after it is signed (NotAfter = NotBefore + its
// lifetime, cert/cert.go NewSignedCert). So a leaf expiry earlier than the Machine's
// creation (less issueAllowance) was not reported by k3s about that machine.
//
// Bounds that do not hold, and are not used: a leaf may expire after its CA (k3s
// does not cap a leaf's NotAfter at its CA's), and a leaf's lifetime is 365 days
// unless CATTLE_NEW_SIGNED_CERT_EXPIRATION_DAYS in the signing k3s's environment,
// which the management cluster does not see, says otherwise.
func Implausible(n Node, created time.Time) string {
	if n.State != InWindow || created.IsZero() {
		return ""
	}
	if earliest := created.Add(-issueAllowance); n.Expiry.Before(earliest) {
		return fmt.Sprintf("its leaf certificate %s is reported to expire at %s, before its Machine was created (%s): no certificate the node signed after that expires so early",
			n.Certificate, n.Expiry.UTC().Format(time.RFC3339), created.UTC().Format(time.RFC3339))
	}
	return ""
}
