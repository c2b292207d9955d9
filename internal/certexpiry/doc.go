// Package certexpiry reads what k3s says about its own certificates: the Events its
// certificate monitor records on each Node, and decides, without an API server, when
// each node's soonest k3s certificate expires. The control plane feeds it the Events of
// a workload cluster and writes the outcome on Machines and on its own status.
//
// Facts about k3s (v1.34.9, v1.35.4 and v1.36.2 read alike):
//   - pkg/certmonitor/certmonitor.go: every node, server or agent, checks its
//     certificate files once its API server is up and then every 30 minutes, and
//     records core/v1 Events in namespace "default" with source component
//     "k3s-cert-monitor" on host <node> (pkg/util/api.go BuildControllerEventRecorder;
//     client-go copies the source into reportingController/reportingInstance and
//     names the Event "<node>.<hex nanoseconds>") and involvedObject {kind: Node,
//     name: <node>, uid: <node>} (the name, not the Node's UID):
//     CertificateExpirationWarning (Warning) while a leaf certificate expires within
//     CertificateRenewDays (120, pkg/daemons/config/types.go) or has expired,
//     CACertificateExpirationWarning (Warning) while a CA expires within 365 days, and
//     CertificateExpirationOK (Normal) only at the first check after k3s starts, when
//     neither warning applies. Every check refreshes the same warning (client-go's
//     event correlator bumps count and lastTimestamp of an identical Event), whose
//     lifetime on the API server is the event TTL (1 hour by default).
//   - Each warning lists one certificate per line (errors.Join):
//     "<service>/<file>: certificate <subject> will expire within <days> days at <RFC3339>",
//     "... expired at <RFC3339>" or "... is not valid before <RFC3339>" (the last is
//     util.GetCertStatus's NOT YET VALID, pkg/util/cert.go), dates formatted in the
//     node's time zone.
//   - A leaf file holds the leaf followed by its CA's certificates (deps.go
//     createClientCertKey, pkg/server/handlers/handlers.go for an agent's: both
//     util.EncodeCertsPEM(cert, caCerts)), and every certificate of a file is
//     checked: a CA within 120 days is listed under each leaf file it signs.
//   - pkg/daemons/control/deps/deps.go: at start, k3s renews the leaf certificates
//     that expire within 120 days (expired() looks at the file's first certificate
//     only); nothing renews them while k3s runs, and nothing but a CA rotation renews
//     a CA.
package certexpiry
