package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KThreesConfigTemplateSpec holds the template of the KThreesConfigs made from it.
type KThreesConfigTemplateSpec struct {
	// template is copied into each KThreesConfig made from it.
	Template KThreesConfigTemplateResource `json:"template"`
}

// KThreesConfigTemplateResource is the object a template stamps out.
type KThreesConfigTemplateResource struct {
	// spec is the KThreesConfig spec.
	// +optional
	Spec KThreesConfigSpec `json:"spec,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=kthreesconfigtemplates,scope=Namespaced,categories=cluster-api,shortName=k3sct
// +kubebuilder:deprecatedversion:warning="bootstrap.cluster.x-k8s.io/v1beta1 KThreesConfigTemplate is deprecated; use bootstrap.cluster.x-k8s.io/v1beta2"

// KThreesConfigTemplate is the deprecated v1beta1 KThreesConfigTemplate.
type KThreesConfigTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec KThreesConfigTemplateSpec `json:"spec,omitempty"`
}

// +kubebuilder:object:root=true

// KThreesConfigTemplateList is a list of v1beta1 KThreesConfigTemplates.
type KThreesConfigTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KThreesConfigTemplate `json:"items"`
}
