package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SimMachinePoolFinalizer lets the simulator take the pool's instances out of their
// cluster (their Nodes go) before the SimMachinePool goes.
const SimMachinePoolFinalizer = "simmachinepool.infrastructure.sim.capk3s.io"

// SimMachinePoolSpec is a simulated group of identical machines, as a cloud's
// autoscaling group: it keeps its MachinePool's replicas running, each instance booted
// from the pool's bootstrap data as it was when the instance started.
type SimMachinePoolSpec struct {
	// providerIDList is set by the simulator: the provider IDs of the pool's instances,
	// which the MachinePool matches to Nodes (the contract's field).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	ProviderIDList []string `json:"providerIDList,omitempty"`

	// kernelWithoutWireGuard makes the instances' kernel one without WireGuard, as
	// SimMachineSpec's field does: off by default (WireGuard available). An instance
	// whose k3s would run flannel with wireguard-native does not join; the pool's
	// Ready condition says why (reason K3sExited).
	// +optional
	KernelWithoutWireGuard bool `json:"kernelWithoutWireGuard,omitempty"`
}

// SimMachinePoolInstance is one running machine of the pool.
type SimMachinePoolInstance struct {
	// name is the instance's host name, and its Node's unless the data names another.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// providerID is sim://<namespace>/<name>.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ProviderID string `json:"providerID"`

	// nodeName is the instance's Node in the workload cluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	NodeName string `json:"nodeName"`

	// k3sVersion is the k3s version the instance's bootstrap data installed.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	K3sVersion string `json:"k3sVersion,omitempty"`

	// dataHash identifies the bootstrap data the instance booted from: an instance
	// whose hash is not the current data's is replaced.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	DataHash string `json:"dataHash"`
}

// SimMachinePoolInitializationStatus is the contract's provisioning flag.
// +kubebuilder:validation:MinProperties=1
type SimMachinePoolInitializationStatus struct {
	// provisioned is true once the pool first ran all its replicas.
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// SimMachinePoolStatus is what the simulator observed.
type SimMachinePoolStatus struct {
	// initialization is the contract's provisioning status.
	// +optional
	Initialization SimMachinePoolInitializationStatus `json:"initialization,omitempty,omitzero"`

	// ready mirrors initialization.provisioned: CAPI's MachinePool controller reads
	// this older field of the contract.
	// +optional
	Ready *bool `json:"ready,omitempty"`

	// replicas is the number of running instances.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// instances are the running machines, oldest first.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=1000
	Instances []SimMachinePoolInstance `json:"instances,omitempty"`

	// conditions: Ready, True while every replica runs the current bootstrap data;
	// while False, its reason and message say what the pool waits for or why an
	// instance could not join.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=simmachinepools,scope=Namespaced,categories=cluster-api
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta2"
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']"
// +kubebuilder:printcolumn:name="Replicas",type="integer",JSONPath=".status.replicas"
// +kubebuilder:printcolumn:name="Provisioned",type="boolean",JSONPath=".status.initialization.provisioned"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// SimMachinePool is a simulated pool of machines that run k3s agents from their
// MachinePool's bootstrap data.
type SimMachinePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired pool.
	// +optional
	Spec SimMachinePoolSpec `json:"spec,omitempty,omitzero"`
	// status is what the simulator observed.
	// +optional
	Status SimMachinePoolStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the conditions, for CAPI's condition utilities.
func (m *SimMachinePool) GetConditions() []metav1.Condition { return m.Status.Conditions }

// SetConditions sets the conditions, for CAPI's condition utilities.
func (m *SimMachinePool) SetConditions(conditions []metav1.Condition) {
	m.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// SimMachinePoolList is a list of SimMachinePools.
type SimMachinePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SimMachinePool `json:"items"`
}
