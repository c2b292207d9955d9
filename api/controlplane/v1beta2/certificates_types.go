package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CertificatesExpiringCondition warns while some node of the cluster (server or agent)
// reports a k3s leaf certificate that expires within k3s's renewal window (120 days,
// in which a restart of k3s renews it), or has expired. The message names the soonest
// date, its node and certificate. False when every node that reports says otherwise;
// Unknown while the workload cluster cannot be read. Added by capk3s.
const CertificatesExpiringCondition = "CertificatesExpiring"

// Reasons of CertificatesExpiring.
const (
	// CertificatesExpiringReason: a leaf certificate expires within k3s's window.
	CertificatesExpiringReason = "CertificatesExpiring"
	// CertificatesExpiredReason: a leaf certificate has expired.
	CertificatesExpiredReason = "CertificatesExpired"
	// CertificatesNotExpiringReason: no node reports a leaf certificate within the window.
	CertificatesNotExpiringReason = "CertificatesNotExpiring"
)

// CertificateAuthoritiesExpiringCondition warns while a cluster CA expires within 365
// days (k3s's own CA warning period), as a node reports it (its
// CACertificateExpirationWarning, or a CA listed under a leaf file) or as the CA
// Secrets say. A restart or a replacement renews no CA: capk3s does neither for it,
// and the message says what the user must do (a CA rotation). False otherwise.
// Added by capk3s.
const CertificateAuthoritiesExpiringCondition = "CertificateAuthoritiesExpiring"

// Reasons of CertificateAuthoritiesExpiring.
const (
	// CertificateAuthorityExpiringReason: a CA expires within 365 days.
	CertificateAuthorityExpiringReason = "CertificateAuthorityExpiring"
	// CertificateAuthorityExpiredReason: a CA has expired.
	CertificateAuthorityExpiredReason = "CertificateAuthorityExpired"
	// CertificateAuthoritiesNotExpiringReason: no CA expires within 365 days.
	CertificateAuthoritiesNotExpiringReason = "CertificateAuthoritiesNotExpiring"
)

// DefaultCACertificateValidityPeriodDays is the lifetime of a cluster CA capk3s
// generates when caCertificateValidityPeriodDays is not set: CAPI's default
// (util/secret DefaultCACertificatesExpiryDays), which capk3s has always used.
const DefaultCACertificateValidityPeriodDays = 3650

// CertificatesStatus is what the control plane reports of the cluster's certificates.
// Added by capk3s.
type CertificatesStatus struct {
	// soonestExpiry is the soonest expiry of a k3s leaf certificate that any node of
	// the cluster, server or agent, reports within k3s's 120-day renewal window (or
	// expired). Unset when none does: every certificate k3s checked then expires
	// later than 120 days after its check.
	// +optional
	SoonestExpiry *metav1.Time `json:"soonestExpiry,omitempty"`

	// nodeName is the Node that reported soonestExpiry.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	NodeName string `json:"nodeName,omitempty"`

	// machineName is that Node's Machine.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	MachineName string `json:"machineName,omitempty"`

	// certificate is the certificate file, as k3s names it ("<service>/<file>").
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Certificate string `json:"certificate,omitempty"`

	// authorities are the cluster CAs this control plane holds in Secrets, with
	// the date each expires.
	// +optional
	// +listType=map
	// +listMapKey=secretName
	// +kubebuilder:validation:MaxItems=8
	Authorities []CertificateAuthorityStatus `json:"authorities,omitempty"`
}

// CertificateAuthorityStatus is one cluster CA.
type CertificateAuthorityStatus struct {
	// secretName is the Secret that holds the CA (<cluster>-ca, -cca or -etcd).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName"`

	// notAfter is when the CA certificate expires.
	// +required
	NotAfter metav1.Time `json:"notAfter"`
}
