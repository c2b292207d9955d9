package k3smodel

import (
	"crypto/x509/pkix"
	"fmt"
	"strconv"
	"time"
)

// How long k3s's certificates live and when k3s renews them.
//
// k3s signs every certificate with github.com/rancher/dynamiclistener's cert package,
// v0.7.5 in k3s v1.34.9, v1.35.4 and v1.36.2 (go.mod); read from that tag's
// cert/cert.go and cert/validity.go:
//   - NewSignedCert (every leaf): NotBefore is one hour before the signing moment
//     (clock skew), or the CA's NotBefore if that is later (CalculateNotBefore);
//     NotAfter is NotBefore + 365 days, or + CATTLE_NEW_SIGNED_CERT_EXPIRATION_DAYS
//     days when that variable of the signing k3s process is an integer (otherwise it
//     is ignored). For an agent's certificates the signing process is a server's.
//   - NewSelfSignedCACert (a CA k3s makes itself): NotBefore one hour before, NotAfter
//     NotBefore + 3650 days; v0.7.5 reads no variable for it.
//   - IsCertExpired(cert, days): true when NotAfter is at most `days` days away (or
//     past).
//
// k3s's rules (pkg/daemons/config/types.go: CertificateRenewDays = 120;
// pkg/daemons/control/deps/deps.go: createClientCertKey regenerates a certificate
// when IsCertExpired(cert, CertificateRenewDays), when its subject, SANs or issuing CA
// changed, or when it is missing; that runs at every k3s server start, in
// GenServerDeps), the same in v1.34.9, v1.35.4 and v1.36.2:
//   - a server's own certificates are renewed at a k3s start only inside the last 120
//     days of their life;
//   - the agent's certificates (LeafFile.FromServer) are signed anew at every start.
//
// Not modelled: a change of subject, SANs or CA (CA rotation) regenerating a
// certificate; the supervisor's dynamiclistener serving certificate; `k3s
// certificate rotate`.

const (
	// CertificateRenewDays is k3s's renewal window and the certificate monitor's
	// warning period for leaf certificates.
	CertificateRenewDays = 120
	// CAWarningDays is the certificate monitor's warning period for CAs
	// (pkg/certmonitor/certmonitor.go).
	CAWarningDays = 365
	// LeafLifetime is NewSignedCert's default lifetime.
	LeafLifetime = 365 * 24 * time.Hour
	// GeneratedCALifetime is NewSelfSignedCACert's lifetime.
	GeneratedCALifetime = 3650 * 24 * time.Hour
	// LeafLifetimeEnv is the variable of the signing k3s process that overrides
	// LeafLifetime, in days.
	LeafLifetimeEnv = "CATTLE_NEW_SIGNED_CERT_EXPIRATION_DAYS"
	// notBeforeSkew is how far before the signing moment dynamiclistener dates a
	// certificate.
	notBeforeSkew = time.Hour
)

// LeafLifetimeFrom is the lifetime NewSignedCert gives with LeafLifetimeEnv set to v
// ("" when unset); a value that is no integer is ignored, as dynamiclistener does.
func LeafLifetimeFrom(v string) time.Duration {
	if v == "" {
		return LeafLifetime
	}
	days, err := strconv.Atoi(v)
	if err != nil {
		return LeafLifetime
	}
	return time.Duration(days) * 24 * time.Hour
}

// CA is a CA certificate as the monitor sees it.
type CA struct {
	Name      CAName
	Subject   pkix.Name
	NotBefore time.Time
	NotAfter  time.Time
}

// GeneratedCA is the CA k3s makes itself at `at` when the data brings none.
func GeneratedCA(name CAName, at time.Time) CA {
	nb := x509Time(at.Add(-notBeforeSkew))
	return CA{
		Name:      name,
		Subject:   subject(fmt.Sprintf("%s-ca@%d", GeneratedCAPrefix[name], at.Unix())),
		NotBefore: nb, NotAfter: nb.Add(GeneratedCALifetime),
	}
}

// Leaf is a leaf certificate on a node.
type Leaf struct {
	LeafFile
	NotBefore time.Time
	NotAfter  time.Time
}

// Sign is the certificate NewSignedCert makes at `at`, with the given lifetime, under
// the CA ca.
func Sign(f LeafFile, ca CA, at time.Time, lifetime time.Duration) Leaf {
	nb := x509Time(at.Add(-notBeforeSkew))
	if nb.Before(ca.NotBefore) {
		nb = ca.NotBefore
	}
	return Leaf{LeafFile: f, NotBefore: nb, NotAfter: nb.Add(lifetime)}
}

// IssueAll is every leaf certificate of a node signed at `at`: what a node's first
// k3s start leaves on disk. A CA missing from cas signs as one valid since `at`.
func IssueAll(server bool, node string, cas map[CAName]CA, at time.Time, lifetime time.Duration) []Leaf {
	files := LeafFiles(server, node)
	out := make([]Leaf, 0, len(files))
	for _, f := range files {
		out = append(out, Sign(f, caOrNow(cas, f.CA, at), at, lifetime))
	}
	return out
}

// InRenewalWindow is dynamiclistener's IsCertExpired with k3s's CertificateRenewDays:
// the certificate expires within 120 days of now, or has expired.
func InRenewalWindow(notAfter, now time.Time) bool {
	return notAfter.Sub(now) <= CertificateRenewDays*24*time.Hour
}

// Restart is what a k3s start at `now` leaves on disk: the agent's certificates signed
// anew, a server's own certificates renewed when InRenewalWindow, the others kept. It
// also names the renewed files.
func Restart(leaves []Leaf, cas map[CAName]CA, now time.Time, lifetime time.Duration) ([]Leaf, []string) {
	out := make([]Leaf, len(leaves))
	var renewed []string
	for i, l := range leaves {
		out[i] = l
		if l.FromServer || InRenewalWindow(l.NotAfter, now) {
			out[i] = Sign(l.LeafFile, caOrNow(cas, l.CA, now), now, lifetime)
			renewed = append(renewed, l.Path)
		}
	}
	return out, renewed
}

// Soonest is the earliest NotAfter of the leaves; zero for none.
func Soonest(leaves []Leaf) time.Time {
	var t time.Time
	for _, l := range leaves {
		if t.IsZero() || l.NotAfter.Before(t) {
			t = l.NotAfter
		}
	}
	return t
}

// KubeletClientExpired says whether the node's kubelet client certificate has
// expired at now: the API server then refuses the kubelet, so the Node's status is
// no longer posted, and the monitor's Events, written with the kubelet's kubeconfig
// (certmonitor.go: util.GetClientSet(nodeConfig.AgentConfig.KubeConfigKubelet)),
// are refused too. The refusal is Kubernetes' client-certificate authenticator
// (k8s.io/apiserver pkg/authentication/request/x509: the chain is verified at the
// current time), not k3s's code.
func KubeletClientExpired(leaves []Leaf, now time.Time) bool {
	for _, l := range leaves {
		if l.Path == KubeletClientPath {
			return now.After(l.NotAfter)
		}
	}
	return false
}

func caOrNow(cas map[CAName]CA, name CAName, at time.Time) CA {
	if ca, ok := cas[name]; ok {
		return ca
	}
	return CA{Name: name, NotBefore: time.Time{}, NotAfter: at.Add(GeneratedCALifetime)}
}

// x509Time is t as a certificate stores it: UTC, whole seconds.
func x509Time(t time.Time) time.Time {
	return t.UTC().Truncate(time.Second)
}
