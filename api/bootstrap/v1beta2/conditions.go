package v1beta2

// Condition types and reasons that the KThreesConfig controller reports. Ready and
// Paused are CAPI's own (clusterv1.ReadyCondition, clusterv1.PausedCondition).
const (
	// DataSecretAvailableCondition is True once the bootstrap data Secret exists.
	DataSecretAvailableCondition = "DataSecretAvailable"

	// CertificatesAvailableCondition is True once the cluster CAs the machine needs exist.
	CertificatesAvailableCondition = "CertificatesAvailable"

	// WaitingForClusterInfrastructureReason: the Cluster's infrastructure is not provisioned yet.
	WaitingForClusterInfrastructureReason = "WaitingForClusterInfrastructure"

	// WaitingForControlPlaneInitializationReason: a joining machine waits for the first server.
	WaitingForControlPlaneInitializationReason = "WaitingForControlPlaneInitialization"

	// WaitingForTokenReason: the cluster's join token Secret does not exist yet.
	WaitingForTokenReason = "WaitingForToken"

	// DataSecretAvailableReason: the bootstrap data Secret exists.
	DataSecretAvailableReason = "Available"
)
