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

	// EtcdClusterHealthyCondition reports the embedded etcd members' health; not set
	// on a control plane with an external datastore.
	EtcdClusterHealthyCondition = "EtcdClusterHealthy"

	// DatastoreAvailableCondition is set instead of EtcdClusterHealthy on a control
	// plane with an external datastore: True while some server's Node is Ready, which
	// needs a working datastore. It is derived from the workload cluster's Nodes; the
	// controller does not connect to the datastore.
	DatastoreAvailableCondition = "DatastoreAvailable"

	// AvailableCondition is True once the control plane is initialized, the join token
	// is available and the datastore serves: a quorum of the embedded etcd members is
	// healthy (or, with an external datastore, some server's Node is Ready). Unknown
	// while the workload cluster cannot be reached.
	AvailableCondition = "Available"

	// MachinesReadyCondition aggregates the server Machines' Ready conditions.
	MachinesReadyCondition = "MachinesReady"

	// MachinesUpToDateCondition aggregates the server Machines' UpToDate conditions,
	// which this controller sets: True when no server needs a rollout.
	MachinesUpToDateCondition = "MachinesUpToDate"

	// ScalingUpCondition is True while servers are missing; its message says what it waits for.
	ScalingUpCondition = "ScalingUp"

	// ScalingDownCondition is True while there are servers too many.
	ScalingDownCondition = "ScalingDown"

	// DeletingCondition is True while the control plane is being deleted.
	DeletingCondition = "Deleting"

	// RollingOutCondition is True while some servers need replacing; its message says why.
	RollingOutCondition = "RollingOut"

	// TokenAvailableReason: the token Secret exists and is owned by this control plane.
	TokenAvailableReason = "Available"

	// TokenLostReason: the token Secret disappeared after initialization and could not be
	// recovered from any server's bootstrap data.
	TokenLostReason = "Lost"

	// TokenRecoveredReason: the token Secret was recreated from a server's bootstrap data.
	TokenRecoveredReason = "Recovered"

	// TokenReconcileFailedReason: an API error prevented reconciling the token Secret.
	TokenReconcileFailedReason = "ReconcileFailed"

	// Reasons of the machine and availability conditions.
	AvailableReason                 = "Available"
	NotAvailableReason              = "NotAvailable"
	ReadyReason                     = "Ready"
	NotReadyReason                  = "NotReady"
	UpToDateReason                  = "UpToDate"
	NotUpToDateReason               = "NotUpToDate"
	ScalingUpReason                 = "ScalingUp"
	ScalingDownReason               = "ScalingDown"
	NotScalingUpReason              = "NotScalingUp"
	NotScalingDownReason            = "NotScalingDown"
	DeletingReason                  = "Deleting"
	NotDeletingReason               = "NotDeleting"
	WaitingForWorkersDeletionReason = "WaitingForWorkersDeletion"
	RollingOutReason                = "RollingOut"
	NotRollingOutReason             = "NotRollingOut"

	// ReadyUnknownReason and UpToDateUnknownReason: some server's Machine reports its
	// Ready (UpToDate) condition as Unknown, or not at all yet.
	ReadyUnknownReason    = "ReadyUnknown"
	UpToDateUnknownReason = "UpToDateUnknown"
	// NoReplicasReason: MachinesReady and MachinesUpToDate are True because there are no servers.
	NoReplicasReason = "NoReplicas"
	// InternalErrorReason: the controller could not compute the condition; see its log.
	InternalErrorReason = "InternalError"

	// WorkloadClusterUnreachableReason: Available, EtcdClusterHealthy and
	// DatastoreAvailable are Unknown because the workload cluster's API cannot be
	// reached, so its Nodes (and k3s's etcd membership on them) cannot be read.
	WorkloadClusterUnreachableReason = "WorkloadClusterUnreachable"

	// TokenManagedExternallyReason: the token Secret is controlled by other software
	// (a SealedSecret, an ExternalSecret, ...; the message names its kind and name).
	// The control plane joins machines with its value and never writes it. True while
	// the Secret holds a server passphrase, False until its controller writes one.
	TokenManagedExternallyReason = "ManagedExternally"

	// CriticalSettingChangedReason: RollingOut (and ScalingUp or ScalingDown) wait
	// because kthreesConfigSpec changes a setting every k3s server of an embedded-etcd
	// cluster must share with the running ones (flannel-backend, disabling servicelb,
	// secrets-encryption, ...). k3s would refuse every new server, so no server is
	// added, replaced or removed until the spec holds the running servers' values;
	// the message names the settings.
	CriticalSettingChangedReason = "CriticalSettingChanged"
)

// EtcdSnapshotsAvailable reports the etcd snapshots k3s takes, as its ETCDSnapshotFile
// objects on the workload cluster say. Set only while
// kthreesConfigSpec.serverConfig.etcd.snapshots is set; removed otherwise. Unknown,
// with WorkloadClusterUnreachableReason, while the workload cluster cannot be read.
const (
	// EtcdSnapshotsAvailableCondition is True once the newest snapshot is ready to use.
	EtcdSnapshotsAvailableCondition = "EtcdSnapshotsAvailable"

	// EtcdSnapshotAvailableReason: the newest snapshot is ready to use.
	EtcdSnapshotAvailableReason = "SnapshotAvailable"

	// EtcdNoSnapshotYetReason: k3s has reported no snapshot yet (none was due, or the
	// workload cluster has no ETCDSnapshotFile kind yet).
	EtcdNoSnapshotYetReason = "NoSnapshotYet"

	// EtcdSnapshotFailedReason: the newest snapshot failed; the message has k3s's error.
	EtcdSnapshotFailedReason = "SnapshotFailed"
)
