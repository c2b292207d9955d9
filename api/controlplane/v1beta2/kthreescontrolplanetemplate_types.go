package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// KThreesControlPlaneTemplateSpec holds the template a ClusterClass stamps
// KThreesControlPlanes from.
type KThreesControlPlaneTemplateSpec struct {
	// template is copied into each KThreesControlPlane made from it.
	// +required
	Template KThreesControlPlaneTemplateResource `json:"template"`
}

// KThreesControlPlaneTemplateResource is the object a template stamps out.
type KThreesControlPlaneTemplateResource struct {
	// metadata is given to each KThreesControlPlane made from the template: its
	// labels and annotations.
	// +optional
	ObjectMeta KThreesControlPlaneTemplateObjectMeta `json:"metadata,omitempty,omitzero"`

	// spec is the KThreesControlPlane spec, without what the Cluster's topology sets
	// (replicas, version, the infrastructure reference).
	// +required
	Spec KThreesControlPlaneTemplateResourceSpec `json:"spec"`
}

// KThreesControlPlaneTemplateObjectMeta is the metadata of a template's control
// planes. Labels and annotations are what Cluster API's contract takes from a
// template; cluster-api-k3s typed this as a whole object's metadata, so the other
// fields of one are accepted too, kept as written, and ignored (the webhook warns).
// They carry no kubebuilder rules: cluster-api-k3s checked none of them.
type KThreesControlPlaneTemplateObjectMeta struct {
	// labels are given to each KThreesControlPlane made from the template.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// annotations are given to each KThreesControlPlane made from the template.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// name is a whole object's name.
	//
	// Deprecated: ignored. Cluster API names each control plane it makes from the
	// template after its Cluster.
	// +optional
	DeprecatedName string `json:"name,omitempty"`

	// generateName is a whole object's name prefix.
	//
	// Deprecated: ignored, as name is.
	// +optional
	DeprecatedGenerateName string `json:"generateName,omitempty"`

	// namespace is a whole object's namespace.
	//
	// Deprecated: ignored. A control plane is made in its Cluster's namespace.
	// +optional
	DeprecatedNamespace string `json:"namespace,omitempty"`

	// selfLink is an object's URL, which the API server no longer sets.
	//
	// Deprecated: ignored.
	// +optional
	DeprecatedSelfLink string `json:"selfLink,omitempty"`

	// uid is set by the API server on each object.
	//
	// Deprecated: ignored.
	// +optional
	DeprecatedUID types.UID `json:"uid,omitempty"`

	// resourceVersion is set by the API server on each object.
	//
	// Deprecated: ignored.
	// +optional
	DeprecatedResourceVersion string `json:"resourceVersion,omitempty"`

	// generation is set by the API server on each object.
	//
	// Deprecated: ignored.
	// +optional
	DeprecatedGeneration int64 `json:"generation,omitempty"`

	// creationTimestamp is set by the API server on each object.
	//
	// Deprecated: ignored.
	// +optional
	DeprecatedCreationTimestamp *metav1.Time `json:"creationTimestamp,omitempty"`

	// deletionTimestamp is set by the API server on an object being deleted.
	//
	// Deprecated: ignored.
	// +optional
	DeprecatedDeletionTimestamp *metav1.Time `json:"deletionTimestamp,omitempty"`

	// deletionGracePeriodSeconds is set by the API server on an object being deleted.
	//
	// Deprecated: ignored.
	// +optional
	DeprecatedDeletionGracePeriodSeconds *int64 `json:"deletionGracePeriodSeconds,omitempty"`

	// ownerReferences are a whole object's owners.
	//
	// Deprecated: ignored by capk3s. The template's own owners belong in its
	// metadata.ownerReferences; each control plane is owned by its Cluster.
	// +optional
	// +listType=atomic
	DeprecatedOwnerReferences []metav1.OwnerReference `json:"ownerReferences,omitempty"`

	// finalizers are a whole object's finalizers.
	//
	// Deprecated: ignored. The control plane controller adds the finalizer it needs.
	// +optional
	// +listType=atomic
	DeprecatedFinalizers []string `json:"finalizers,omitempty"`

	// managedFields are set by the API server on each object.
	//
	// Deprecated: ignored.
	// +optional
	// +listType=atomic
	DeprecatedManagedFields []DeprecatedManagedFieldsEntry `json:"managedFields,omitempty"`
}

// DeprecatedManagedFieldsEntry holds one entry of a whole object's managedFields, as
// metav1.ManagedFieldsEntry does; fieldsV1 is kept as written, whatever it holds.
type DeprecatedManagedFieldsEntry struct {
	// manager is the name of the writer.
	// +optional
	Manager string `json:"manager,omitempty"`
	// operation is Apply or Update.
	// +optional
	Operation string `json:"operation,omitempty"`
	// apiVersion of the fields.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// time of the write.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
	// fieldsType is the format of fieldsV1.
	// +optional
	FieldsType string `json:"fieldsType,omitempty"`
	// fieldsV1 is the set of fields written.
	// +optional
	FieldsV1 *runtime.RawExtension `json:"fieldsV1,omitempty"`
	// subresource the write went to.
	// +optional
	Subresource string `json:"subresource,omitempty"`
}

// KThreesControlPlaneTemplateResourceSpec is KThreesControlPlaneSpec less the fields
// that a ClusterClass topology owns.
type KThreesControlPlaneTemplateResourceSpec struct {
	// machineTemplate shapes the servers' Machines.
	// +optional
	MachineTemplate *KThreesControlPlaneTemplateMachineTemplate `json:"machineTemplate,omitempty"`

	// kthreesConfigSpec configures k3s on every server.
	// +optional
	KThreesConfigSpec bootstrapv1.KThreesConfigSpec `json:"kthreesConfigSpec,omitempty,omitzero"`

	// rolloutAfter replaces every server created before this time.
	// +optional
	RolloutAfter *metav1.Time `json:"rolloutAfter,omitempty"`

	// rollout holds the contract's rollout settings, as KThreesControlPlane's.
	// +optional
	Rollout ControlPlaneRolloutSpec `json:"rollout,omitempty,omitzero"`

	// rolloutStrategy says how outdated servers are replaced.
	// +optional
	RolloutStrategy *RolloutStrategy `json:"rolloutStrategy,omitempty"`

	// remediationStrategy says how unhealthy servers are replaced.
	// +optional
	RemediationStrategy *RemediationStrategy `json:"remediationStrategy,omitempty"`

	// machineNaming says how new server Machines are named.
	// +optional
	MachineNaming MachineNamingSpec `json:"machineNaming,omitempty,omitzero"`

	// inPlaceUpdates says whether outdated servers may be updated in place (IfPossible,
	// the default) or are always replaced (Never).
	// +optional
	InPlaceUpdates InPlaceUpdatePolicy `json:"inPlaceUpdates,omitempty"`

	// registrationMethod says how joining servers and agents find the cluster
	// (ControlPlaneEndpoint, the default; InternalAddress; ExternalAddress).
	// +optional
	RegistrationMethod RegistrationMethod `json:"registrationMethod,omitempty"`

	// caCertificateValidityPeriodDays is the lifetime, in days, of the cluster CAs
	// capk3s generates for a new cluster (3650 when not set). It cannot be changed on a
	// control plane. Added by capk3s.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=36500
	CACertificateValidityPeriodDays int32 `json:"caCertificateValidityPeriodDays,omitempty"`
}

// KThreesControlPlaneTemplateMachineTemplate is the machine template of a
// KThreesControlPlaneTemplate; the infrastructure reference comes from the ClusterClass.
// The fields next to spec are cluster-api-k3s's older shape, kept so that its
// manifests are neither refused nor pruned.
type KThreesControlPlaneTemplateMachineTemplate struct {
	// metadata is given to each Machine.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`

	// spec holds the Machines' deletion timeouts and readiness gates.
	// +optional
	Spec KThreesControlPlaneTemplateMachineTemplateSpec `json:"spec,omitempty,omitzero"`

	// infrastructureRef is cluster-api-k3s's reference to an infrastructure template,
	// which its schema required here.
	//
	// Deprecated: ignored. In a ClusterClass the servers' infrastructure template is
	// the ClusterClass's spec.controlPlane.machineInfrastructure.templateRef, and
	// Cluster API sets it on each control plane; the webhook warns when this is set.
	// +optional
	DeprecatedInfrastructureRef *DeprecatedObjectReference `json:"infrastructureRef,omitempty"`

	// nodeDrainTimeout is cluster-api-k3s's drain timeout.
	//
	// Deprecated: use spec.deletion.nodeDrainTimeoutSeconds; the defaulting webhook
	// moves it there.
	// +optional
	DeprecatedNodeDrainTimeout *metav1.Duration `json:"nodeDrainTimeout,omitempty"`

	// nodeVolumeDetachTimeout is cluster-api-k3s's volume detach timeout.
	//
	// Deprecated: use spec.deletion.nodeVolumeDetachTimeoutSeconds.
	// +optional
	DeprecatedNodeVolumeDetachTimeout *metav1.Duration `json:"nodeVolumeDetachTimeout,omitempty"`

	// nodeDeletionTimeout is cluster-api-k3s's node deletion timeout.
	//
	// Deprecated: use spec.deletion.nodeDeletionTimeoutSeconds.
	// +optional
	DeprecatedNodeDeletionTimeout *metav1.Duration `json:"nodeDeletionTimeout,omitempty"`
}

// KThreesControlPlaneTemplateMachineTemplateSpec is the templated part of machineTemplate.spec.
type KThreesControlPlaneTemplateMachineTemplateSpec struct {
	// readinessGates are extra conditions that each Machine's Ready condition waits for.
	// +optional
	// +listType=map
	// +listMapKey=conditionType
	// +kubebuilder:validation:MaxItems=32
	ReadinessGates []clusterv1.MachineReadinessGate `json:"readinessGates,omitempty"`

	// deletion holds the timeouts used when a server's Machine is deleted.
	// +optional
	Deletion MachineDeletionSpec `json:"deletion,omitempty,omitzero"`

	// minReadySeconds is how long a server's Machine must be Ready before it counts as
	// Available (default 0).
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty"`

	// taints are the Node taints that Cluster API's Machine controller keeps on each
	// server's Node.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +listMapKey=effect
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Taints []clusterv1.MachineTaint `json:"taints,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=kthreescontrolplanetemplates,scope=Namespaced,categories=cluster-api
// +kubebuilder:storageversion
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta2"
// +kubebuilder:printcolumn:name="ClusterClass",type="string",JSONPath=`.metadata.ownerReferences[?(@.kind=="ClusterClass")].name`,description="The ClusterClass that owns this template"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// KThreesControlPlaneTemplate is a template for KThreesControlPlanes, used by ClusterClasses.
type KThreesControlPlaneTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the template.
	// +optional
	Spec KThreesControlPlaneTemplateSpec `json:"spec,omitempty"`
}

// +kubebuilder:object:root=true

// KThreesControlPlaneTemplateList is a list of KThreesControlPlaneTemplates.
type KThreesControlPlaneTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KThreesControlPlaneTemplate `json:"items"`
}
