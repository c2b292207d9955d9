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

// KnownCAs are the CA certificates of a cluster: those the management cluster holds
// (its CA Secrets), and those any server listed in its CA warning.
type KnownCAs map[CACert]bool

// Add records a CA certificate.
func (k KnownCAs) Add(subject string, notAfter time.Time) {
	k[CACert{Subject: subject, NotAfter: notAfter.UTC().Truncate(time.Second)}] = true
}

// AddReported records the CAs the Events' CA warnings list (of every node: agents
// check no CA file, yet their leaf files carry the cluster's CAs).
func (k KnownCAs) AddReported(byNode map[string][]Event) {
	for _, events := range byNode {
		for _, e := range events {
			if e.Reason != ReasonCAWarning {
				continue
			}
			for _, c := range ParseMessage(e.Message) {
				if c.Status != NotYetValid {
					k.Add(c.Subject, c.Date)
				}
			}
		}
	}
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
