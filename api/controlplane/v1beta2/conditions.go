package v1beta2

// Condition types and reasons that the KThreesControlPlane controller reports. Ready,
// Available, Paused, RollingOut, ScalingUp/ScalingDown and Remediating are CAPI's own
// names (clusterv1.*Condition) and are used as they are.
const (
	// TokenAvailableCondition is True while the cluster's join token Secret exists and
	// is controlled by this control plane. False blocks scale-up.
	TokenAvailableCondition = "TokenAvailable"

	// CertificatesAvailableCondition is True once the cluster CAs exist.
	CertificatesAvailableCondition = "CertificatesAvailable"

	// EtcdClusterHealthyCondition reports the embedded etcd members' health.
	EtcdClusterHealthyCondition = "EtcdClusterHealthy"

	// TokenAvailableReason: the token Secret exists and is owned by this control plane.
	TokenAvailableReason = "Available"

	// TokenLostReason: the token Secret disappeared after initialization and could not be
	// recovered from any server's bootstrap data.
	TokenLostReason = "Lost"

	// TokenRecoveredReason: the token Secret was recreated from a server's bootstrap data.
	TokenRecoveredReason = "Recovered"

	// TokenReconcileFailedReason: an API error prevented reconciling the token Secret.
	TokenReconcileFailedReason = "ReconcileFailed"
)
