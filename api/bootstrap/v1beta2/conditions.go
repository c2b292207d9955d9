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

	// WaitingForControlPlaneEndpointReason: the Cluster has no control plane endpoint yet.
	WaitingForControlPlaneEndpointReason = "WaitingForControlPlaneEndpoint"

	// WaitingForDatastoreSecretReason: a server's spec.serverConfig.datastore names a
	// Secret, or a key of one, that does not exist yet.
	WaitingForDatastoreSecretReason = "WaitingForDatastoreSecret"

	// WaitingForUserPasswordSecretReason: a spec.users[].passwdFrom names a Secret, or
	// a key of one, that does not exist yet.
	WaitingForUserPasswordSecretReason = "WaitingForUserPasswordSecret"

	// WaitingForEtcdS3SecretReason: a server's spec.serverConfig.etcd.snapshots.s3
	// names a Secret, or a key of one, that does not exist yet.
	WaitingForEtcdS3SecretReason = "WaitingForEtcdS3Secret"

	// WaitingForRegistrationServerReason: the control plane joins machines through a
	// server's address (its spec.registrationMethod) and has published no ready server
	// with such an address yet.
	WaitingForRegistrationServerReason = "WaitingForRegistrationServer"

	// WaitingForInitLockReason: another server holds the init lock and initializes the cluster.
	WaitingForInitLockReason = "WaitingForInitLock"

	// EtcdRestoreNotInProgressReason: a server config carries the etcd restore's
	// annotation, but no KThreesEtcdRestore in progress made it its first server; it
	// gets no bootstrap data (neither a restore nor a join) until one does.
	EtcdRestoreNotInProgressReason = "EtcdRestoreNotInProgress"

	// DataSecretGenerationFailedReason: the configuration cannot be turned into bootstrap
	// data (bad version, a missing referenced Secret, ...); the message says what to fix.
	DataSecretGenerationFailedReason = "DataSecretGenerationFailed"

	// DataSecretTooLargeReason: the rendered bootstrap data does not fit in a Secret
	// (1 MiB), typically because of large files taken from Secrets; the message names
	// the largest contributors.
	DataSecretTooLargeReason = "DataSecretTooLarge"

	// DataSecretAvailableReason: the bootstrap data Secret exists.
	DataSecretAvailableReason = "Available"

	// CertificatesAvailableReason: the cluster CAs exist and were given to the server.
	CertificatesAvailableReason = "Available"

	// CertificatesMissingReason: a joining server found no cluster CA Secrets.
	CertificatesMissingReason = "Missing"
)
