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

// CertificateRenewalHeldCondition is True while certificate renewal holds back from a
// node that a certificate report would otherwise have it restart or replace: a k3s
// restart did not change the expiry the node reports (reason RestartRenewedNothing;
// nothing more is done for that expiry, as neither a second restart nor a replacement
// would be more than churn if the report is forged or is not one a restart renews), or
// a server's replacement for its certificates waits for the per-control-plane limit
// (reason ReplacementRateLimited, with the time of the next), or a node's next
// restart waits a day after its last (reason RestartRateLimited). False otherwise. Added
// by capk3s.
const CertificateRenewalHeldCondition = "CertificateRenewalHeld"

// Reasons of CertificateRenewalHeld.
const (
	RestartRenewedNothingReason  = "RestartRenewedNothing"
	ReplacementRateLimitedReason = "ReplacementRateLimited"
	// RestartRateLimitedReason: a node restarted for its certificates less than a
	// day ago is due again, for another expiry; its next restart waits.
	RestartRateLimitedReason        = "RestartRateLimited"
	CertificateRenewalNotHeldReason = "NotHeld"
)

// CertificatesReplacementAnnotation on a KThreesControlPlane records its last
// replacement of a server for certificates: "<RFC 3339 time> <Machine name>". Until
// that Machine is gone and renewalplan.ReplaceInterval has passed since, no other
// server is replaced for its certificates. Removing it lets the next one go at once.
const CertificatesReplacementAnnotation = "controlplane.cluster.x-k8s.io/certificates-replacement"
