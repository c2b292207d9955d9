package controlplane

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// The API marks cluster-api-k3s's fields Deprecated so that code reading them gets
// flagged; moving, checking and warning about them is this package's job, so it
// reaches them through the functions of this file only.

// deprecatedRef points at machineTemplate.infrastructureRef.
func deprecatedRef(mt *controlplanev1.KThreesControlPlaneMachineTemplate) **controlplanev1.DeprecatedObjectReference {
	return &mt.DeprecatedInfrastructureRef //nolint:staticcheck // converting the deprecated field is this package's job
}

// templateDeprecatedRef points at a template's machineTemplate.infrastructureRef.
func templateDeprecatedRef(mt *controlplanev1.KThreesControlPlaneTemplateMachineTemplate) *controlplanev1.DeprecatedObjectReference {
	return mt.DeprecatedInfrastructureRef //nolint:staticcheck // warning about the deprecated field is this package's job
}

// deprecatedTimeout pairs a cluster-api-k3s duration with the seconds field of
// machineTemplate.spec.deletion that replaces it.
type deprecatedTimeout struct {
	oldName, newName string
	old              **metav1.Duration
	seconds          **int32
}

func deprecatedTimeouts(mt *controlplanev1.KThreesControlPlaneMachineTemplate) []deprecatedTimeout {
	return timeoutPairs(&mt.DeprecatedNodeDrainTimeout, &mt.DeprecatedNodeVolumeDetachTimeout, //nolint:staticcheck // converting the deprecated fields is this package's job
		&mt.DeprecatedNodeDeletionTimeout, &mt.Spec.Deletion) //nolint:staticcheck // converting the deprecated fields is this package's job
}

// templateDeprecatedTimeouts is deprecatedTimeouts for a template's machine template,
// which has the same durations and the same deletion block.
func templateDeprecatedTimeouts(mt *controlplanev1.KThreesControlPlaneTemplateMachineTemplate) []deprecatedTimeout {
	return timeoutPairs(&mt.DeprecatedNodeDrainTimeout, &mt.DeprecatedNodeVolumeDetachTimeout, //nolint:staticcheck // converting the deprecated fields is this package's job
		&mt.DeprecatedNodeDeletionTimeout, &mt.Spec.Deletion) //nolint:staticcheck // converting the deprecated fields is this package's job
}

func timeoutPairs(drain, detach, deletion **metav1.Duration, d *controlplanev1.MachineDeletionSpec) []deprecatedTimeout {
	return []deprecatedTimeout{
		{"nodeDrainTimeout", "nodeDrainTimeoutSeconds", drain, &d.NodeDrainTimeoutSeconds},
		{"nodeVolumeDetachTimeout", "nodeVolumeDetachTimeoutSeconds", detach, &d.NodeVolumeDetachTimeoutSeconds},
		{"nodeDeletionTimeout", "nodeDeletionTimeoutSeconds", deletion, &d.NodeDeletionTimeoutSeconds},
	}
}

// ignoredMetadataField is one field of a template's spec.template.metadata beyond
// labels and annotations, and whether it is set.
type ignoredMetadataField struct {
	name string
	set  bool
	why  string
}

// Why each group of a template's metadata fields does nothing, for the warnings.
const (
	whyNamed    = "Cluster API names each control plane it makes from the template and puts it in its Cluster's namespace"
	whyServer   = "the API server sets it on each object itself; a template cannot hand it on"
	whyFinalize = "Cluster API drops a template's finalizers, and the control plane controller adds its own"
	whyOwners   = "the template's own owners belong in its metadata.ownerReferences; Cluster API copies these onto each new control plane, so remove them"
)

// ignoredMetadataFields lists the whole-object metadata fields that
// cluster-api-k3s's template type allowed in spec.template.metadata, in the order
// of the API type.
func ignoredMetadataFields(m *controlplanev1.KThreesControlPlaneTemplateObjectMeta) []ignoredMetadataField {
	//nolint:staticcheck // warning about the deprecated fields is this function's job
	return []ignoredMetadataField{
		{"name", m.DeprecatedName != "", whyNamed},
		{"generateName", m.DeprecatedGenerateName != "", whyNamed},
		{"namespace", m.DeprecatedNamespace != "", whyNamed},
		{"selfLink", m.DeprecatedSelfLink != "", whyServer},
		{"uid", m.DeprecatedUID != "", whyServer},
		{"resourceVersion", m.DeprecatedResourceVersion != "", whyServer},
		{"generation", m.DeprecatedGeneration != 0, whyServer},
		{"creationTimestamp", m.DeprecatedCreationTimestamp != nil, whyServer},
		{"deletionTimestamp", m.DeprecatedDeletionTimestamp != nil, whyServer},
		{"deletionGracePeriodSeconds", m.DeprecatedDeletionGracePeriodSeconds != nil, whyServer},
		{"ownerReferences", len(m.DeprecatedOwnerReferences) > 0, whyOwners},
		{"finalizers", len(m.DeprecatedFinalizers) > 0, whyFinalize},
		{"managedFields", len(m.DeprecatedManagedFields) > 0, whyServer},
	}
}
