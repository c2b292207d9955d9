package v1beta2

// CertificatesIssuedAtAnnotation on a SimMachine (RFC3339, e.g.
// "2026-01-10T08:00:00Z") says that k3s signed every leaf certificate of the machine
// at that time: each then expires one hour earlier (dynamiclistener dates
// certificates an hour back) than that time plus the lifetime the cluster's servers
// sign with: k3s's 365 days, or the CATTLE_NEW_SIGNED_CERT_EXPIRATION_DAYS of their
// data (test/sim/certlifetime.go). Also when that is before the cluster's CAs were
// made, which real k3s would not do. It may be set before or after the machine boots,
// and a new value applies again; removing it keeps the certificates as they are.
// Without it, the certificates are signed when k3s first starts on the machine. A
// value that is not RFC3339 changes nothing, and the SimMachine's Certificates
// condition says why. See test/sim/certs.go.
const CertificatesIssuedAtAnnotation = "infrastructure.sim.capk3s.io/certificates-issued-at"

// CertificateCheckIntervalAnnotation on a SimCluster (a Go duration, e.g. "2s") sets
// how often the k3s certificate monitor of its machines checks and records Events,
// instead of k3s's 30 minutes (or the Provider's CertificateCheckInterval). A value
// that is no positive duration is ignored, and the SimMachines' Certificates
// condition says so.
const CertificateCheckIntervalAnnotation = "infrastructure.sim.capk3s.io/certificate-check-interval"
