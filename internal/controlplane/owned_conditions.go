package controlplane

import (
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// ownedConditions are the conditions this controller sets (stale ones left by other
// software are dropped before the first status write).
var ownedConditions = []string{
	controlplanev1.TokenAvailableCondition,
	controlplanev1.CertificatesAvailableCondition,
	controlplanev1.AvailableCondition,
	controlplanev1.MachinesReadyCondition,
	controlplanev1.MachinesUpToDateCondition,
	controlplanev1.ScalingUpCondition,
	controlplanev1.ScalingDownCondition,
	controlplanev1.DeletingCondition,
	controlplanev1.RollingOutCondition,
	remediatingCondition,
	controlplanev1.EtcdClusterHealthyCondition,
	controlplanev1.DatastoreAvailableCondition,
	controlplanev1.EtcdSnapshotsAvailableCondition,
	controlplanev1.CertificatesExpiringCondition,
	controlplanev1.CertificateAuthoritiesExpiringCondition,
	controlplanev1.CertificateRenewalHeldCondition,
}
