package v1beta2

// Certificate renewal by a k3s restart (spec.rollout.before.certificatesExpiryDays with
// the in-place path): what the control plane writes on a Machine, and how it reports.
const (
	// CertificatesRenewingReason: RollingOut is True while k3s is restarted on a node to
	// renew its certificates; the message names the node's Machine and the expiry.
	CertificatesRenewingReason = "CertificatesRenewing"

	// CertificatesRenewingAnnotation on a Machine (server or agent) holds the expiry
	// (RFC 3339) that a k3s restart under way renews: the control plane's commitment,
	// written before the restart is asked for and removed when it is done.
	CertificatesRenewingAnnotation = "controlplane.cluster.x-k8s.io/certificates-renewing"
	// CertificatesRestartedForAnnotation on a Machine holds the expiry (RFC 3339) the
	// last completed restart was for, and CertificatesRestartedAtAnnotation when it
	// completed: a node is restarted at most once for one reported expiry.
	CertificatesRestartedForAnnotation = "controlplane.cluster.x-k8s.io/certificates-restarted-for"
	CertificatesRestartedAtAnnotation  = "controlplane.cluster.x-k8s.io/certificates-restarted-at"
)
