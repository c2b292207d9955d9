package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// KThreesConfigTemplateSpec holds the template that KThreesConfigs are created from.
type KThreesConfigTemplateSpec struct {
	// template is copied into each KThreesConfig made from it.
	// +required
	Template KThreesConfigTemplateResource `json:"template"`
}

// KThreesConfigTemplateResource is the object a template stamps out.
type KThreesConfigTemplateResource struct {
	// metadata is given to each KThreesConfig made from the template.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`

	// spec is the KThreesConfig spec.
	// +optional
	Spec KThreesConfigSpec `json:"spec,omitempty,omitzero"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=kthreesconfigtemplates,scope=Namespaced,categories=cluster-api,shortName=k3sct
// +kubebuilder:storageversion
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta2"
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta1=v1beta1"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// KThreesConfigTemplate is a template for KThreesConfigs, used by MachineDeployments,
// MachinePools and ClusterClasses.
type KThreesConfigTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the template.
	// +optional
	Spec KThreesConfigTemplateSpec `json:"spec,omitempty"`
}

// +kubebuilder:object:root=true

// KThreesConfigTemplateList is a list of KThreesConfigTemplates.
type KThreesConfigTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KThreesConfigTemplate `json:"items"`
}
