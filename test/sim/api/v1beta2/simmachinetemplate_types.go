package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// SimMachineTemplateResource is what each SimMachine made from the template gets.
type SimMachineTemplateResource struct {
	// metadata is copied onto the SimMachines.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`
	// spec is the SimMachines' spec.
	// +optional
	Spec SimMachineSpec `json:"spec,omitempty,omitzero"`
}

// SimMachineTemplateSpec holds the template.
type SimMachineTemplateSpec struct {
	// template is the SimMachine to make.
	// +optional
	Template SimMachineTemplateResource `json:"template,omitempty,omitzero"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=simmachinetemplates,scope=Namespaced,categories=cluster-api
// +kubebuilder:storageversion
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta2"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// SimMachineTemplate is the template of SimMachines that MachineDeployments and control
// planes clone.
type SimMachineTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the template.
	// +optional
	Spec SimMachineTemplateSpec `json:"spec,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// SimMachineTemplateList is a list of SimMachineTemplates.
type SimMachineTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SimMachineTemplate `json:"items"`
}
