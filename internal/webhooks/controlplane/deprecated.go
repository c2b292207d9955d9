package controlplane

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// The API marks cluster-api-k3s's machine-template fields Deprecated so that code
// reading them gets flagged; moving and checking them is this package's job, so it
// reaches them through these two functions only.

// deprecatedRef points at machineTemplate.infrastructureRef.
func deprecatedRef(mt *controlplanev1.KThreesControlPlaneMachineTemplate) **controlplanev1.DeprecatedObjectReference {
	return &mt.DeprecatedInfrastructureRef //nolint:staticcheck // converting the deprecated field is this package's job
}

// deprecatedTimeout pairs a cluster-api-k3s duration with the seconds field of
// machineTemplate.spec.deletion that replaces it.
type deprecatedTimeout struct {
	oldName, newName string
	old              **metav1.Duration
	seconds          **int32
}

func deprecatedTimeouts(mt *controlplanev1.KThreesControlPlaneMachineTemplate) []deprecatedTimeout {
	d := &mt.Spec.Deletion
	return []deprecatedTimeout{
		{"nodeDrainTimeout", "nodeDrainTimeoutSeconds",
			&mt.DeprecatedNodeDrainTimeout, &d.NodeDrainTimeoutSeconds}, //nolint:staticcheck // converting the deprecated field is this package's job
		{"nodeVolumeDetachTimeout", "nodeVolumeDetachTimeoutSeconds",
			&mt.DeprecatedNodeVolumeDetachTimeout, &d.NodeVolumeDetachTimeoutSeconds}, //nolint:staticcheck // converting the deprecated field is this package's job
		{"nodeDeletionTimeout", "nodeDeletionTimeoutSeconds",
			&mt.DeprecatedNodeDeletionTimeout, &d.NodeDeletionTimeoutSeconds}, //nolint:staticcheck // converting the deprecated field is this package's job
	}
}
