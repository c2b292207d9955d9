package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// NetnsMachineFinalizer lets the provider stop the machine's processes and remove its
// namespaces and files before the NetnsMachine goes.
const NetnsMachineFinalizer = "netnsmachine.infrastructure.netns.capk3s.io"

// NetnsMachineSpec is a test machine.
type NetnsMachineSpec struct {
	// providerID is netns://<namespace>/<name>, set by the provider; the provider also
	// sets it on the machine's Node, as a cloud's controller would.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ProviderID string `json:"providerID,omitempty"`
	// k3sBinary names which of the layer's k3s binaries the machine's image carries at
	// /usr/local/bin/k3s (the layer's own names, e.g. "old" and "new"); empty means
	// the one matching the Machine's version.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	K3sBinary string `json:"k3sBinary,omitempty"`
}

// NetnsMachineInitializationStatus is the contract's provisioning flag.
// +kubebuilder:validation:MinProperties=1
type NetnsMachineInitializationStatus struct {
	// provisioned is true once the machine booted (its processes run).
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// NetnsMachineStatus is what the provider observed.
type NetnsMachineStatus struct {
	// initialization is the contract's provisioning status.
	// +optional
	Initialization NetnsMachineInitializationStatus `json:"initialization,omitempty,omitzero"`
	// addresses are the machine's address on the bridge and its host name.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	Addresses []clusterv1.MachineAddress `json:"addresses,omitempty"`
	// conditions: Ready, and NodeProviderIDSet once the Node carries providerID.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=netnsmachines,scope=Namespaced,categories=cluster-api
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta2"
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']"
// +kubebuilder:printcolumn:name="Address",type="string",JSONPath=".status.addresses[0].address"
// +kubebuilder:printcolumn:name="ProviderID",type="string",JSONPath=".spec.providerID"

// NetnsMachine is a real-k3s test machine.
type NetnsMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired machine.
	// +optional
	Spec NetnsMachineSpec `json:"spec,omitempty,omitzero"`
	// status is what the provider observed.
	// +optional
	Status NetnsMachineStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the conditions, for CAPI's condition utilities.
func (m *NetnsMachine) GetConditions() []metav1.Condition { return m.Status.Conditions }

// SetConditions sets the conditions, for CAPI's condition utilities.
func (m *NetnsMachine) SetConditions(conditions []metav1.Condition) {
	m.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// NetnsMachineList is a list of NetnsMachines.
type NetnsMachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NetnsMachine `json:"items"`
}

// NetnsMachineTemplateResource is what each NetnsMachine made from the template gets.
type NetnsMachineTemplateResource struct {
	// metadata is copied onto the NetnsMachines.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`
	// spec is the NetnsMachines' spec.
	// +optional
	Spec NetnsMachineSpec `json:"spec,omitempty,omitzero"`
}

// NetnsMachineTemplateSpec holds the template.
type NetnsMachineTemplateSpec struct {
	// template is the NetnsMachine to make.
	// +optional
	Template NetnsMachineTemplateResource `json:"template,omitempty,omitzero"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=netnsmachinetemplates,scope=Namespaced,categories=cluster-api
// +kubebuilder:storageversion
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta2"

// NetnsMachineTemplate is the template of NetnsMachines that MachineDeployments and
// control planes clone.
type NetnsMachineTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the template.
	// +optional
	Spec NetnsMachineTemplateSpec `json:"spec,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// NetnsMachineTemplateList is a list of NetnsMachineTemplates.
type NetnsMachineTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NetnsMachineTemplate `json:"items"`
}
