package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// metadata is given to each KThreesControlPlane made from the template.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`

	// spec is the KThreesControlPlane spec, without what the Cluster's topology sets
	// (replicas, version, the infrastructure reference).
	// +required
	Spec KThreesControlPlaneTemplateResourceSpec `json:"spec"`
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
}

// KThreesControlPlaneTemplateMachineTemplate is the machine template of a
// KThreesControlPlaneTemplate; the infrastructure reference comes from the ClusterClass.
type KThreesControlPlaneTemplateMachineTemplate struct {
	// metadata is given to each Machine.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`

	// spec holds the Machines' deletion timeouts and readiness gates.
	// +optional
	Spec KThreesControlPlaneTemplateMachineTemplateSpec `json:"spec,omitempty,omitzero"`
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
