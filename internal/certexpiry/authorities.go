package certexpiry

import (
	"regexp"
	"time"
)

// A leaf certificate file of k3s holds the leaf followed by its CA's certificates
// (pkg/daemons/control/deps/deps.go, createClientCertKey: util.EncodeCertsPEM(cert,
// caCerts)), and the certificate monitor checks every certificate of a file
// (certutil.CertsFromFile), so a leaf warning lists a CA that expires within 120 days
// under each leaf file it signs, named after the leaf's file. A k3s restart renews
// only the leaf (deps.go, expired: certificates[0]); nothing but a CA rotation renews
// the CA. Such a line is told apart by the CA's subject and date, which are those of a
// CA the cluster is known to have.

// CACert is a CA certificate as k3s prints it: its subject (pkix.Name.String()) and
// NotAfter, to the second.
type CACert struct {
	Subject  string
	NotAfter time.Time
}

// KnownCAs are the CA certificates the management cluster holds for a cluster (its CA
// Secrets). Only what a forger cannot write names a CA: these, and the name k3s gives
// the CAs it makes (generatedCA). A node's CA warning names none: any Event writer can
// copy a leaf's subject and date from the readable Events into one, and a leaf read as
// a CA is never renewed. Such a warning is only reported (Decide, Node.CAExpiry).
type KnownCAs map[CACert]bool

// Add records a CA certificate.
func (k KnownCAs) Add(subject string, notAfter time.Time) {
	k[CACert{Subject: subject, NotAfter: notAfter.UTC().Truncate(time.Second)}] = true
}

// generatedCA is the subject k3s gives a CA it makes itself: "<prefix>-ca@<unix
// seconds>" (deps.go, createSigningCertKey), e.g. CN=k3s-request-header-ca@1700000000.
// No leaf of k3s is named so: their names are fixed, or a node's name, which holds no
// "@".
var generatedCA = regexp.MustCompile(`^CN=[a-z0-9-]+-ca@[0-9]+$`)

// IsCA says that a certificate listed in a warning is a CA.
func (k KnownCAs) IsCA(c Certificate) bool {
	if generatedCA.MatchString(c.Subject) {
		return true
	}
	return c.Status != NotYetValid && k[CACert{Subject: c.Subject, NotAfter: c.Date}]
}
