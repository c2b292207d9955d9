package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// SimMachineFinalizer lets the simulator take the machine out of its cluster (a server
// that still is an etcd member goes down with it) before the SimMachine goes.
const SimMachineFinalizer = "simmachine.infrastructure.sim.capk3s.io"

// SimMachineSpec is a simulated machine.
type SimMachineSpec struct {
	// providerID is set by the simulator: sim://<namespace>/<name>.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ProviderID string `json:"providerID,omitempty"`

	// kernelWithoutWireGuard makes the machine's kernel one without WireGuard (no
	// wireguard module: `ip link add ... type wireguard` fails). Off by default: the
	// machine's kernel has WireGuard, as most cloud images' kernels do. On it, a k3s
	// that runs flannel with flannel-backend wireguard-native (an agent of such a
	// cluster, or a server that runs its agent) exits a few seconds after each start
	// and is restarted by its service for ever, as real k3s does: the machine never
	// joins, and its Ready condition says why (reason K3sExited).
	// +optional
	KernelWithoutWireGuard bool `json:"kernelWithoutWireGuard,omitempty"`
}

// SimMachineInitializationStatus is the contract's provisioning flag.
// +kubebuilder:validation:MinProperties=1
type SimMachineInitializationStatus struct {
	// provisioned is true once the machine booted and k3s on it joined the cluster.
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// SimMachineStatus is what the simulator observed.
type SimMachineStatus struct {
	// initialization is the contract's provisioning status.
	// +optional
	Initialization SimMachineInitializationStatus `json:"initialization,omitempty,omitzero"`

	// addresses are the machine's addresses, as the contract asks.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Addresses []clusterv1.MachineAddress `json:"addresses,omitempty"`

	// role is what k3s runs as on the machine: server or agent.
	// +optional
	// +kubebuilder:validation:Enum=server;agent
	Role string `json:"role,omitempty"`

	// k3sVersion is the k3s version the machine's bootstrap data installs.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	K3sVersion string `json:"k3sVersion,omitempty"`

	// nodeName is the name of the machine's Node in the workload cluster.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	NodeName string `json:"nodeName,omitempty"`

	// conditions: Ready, True once k3s on the machine joined the cluster; while False,
	// its reason and message say what the machine waits for or which of k3s's checks
	// its bootstrap data failed.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=simmachines,scope=Namespaced,categories=cluster-api
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta2"
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']"
// +kubebuilder:printcolumn:name="Role",type="string",JSONPath=".status.role"
// +kubebuilder:printcolumn:name="Version",type="string",JSONPath=".status.k3sVersion"
// +kubebuilder:printcolumn:name="Provisioned",type="boolean",JSONPath=".status.initialization.provisioned"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// SimMachine is a simulated machine that runs k3s from its bootstrap data.
type SimMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired machine.
	// +optional
	Spec SimMachineSpec `json:"spec,omitempty,omitzero"`
	// status is what the simulator observed.
	// +optional
	Status SimMachineStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the conditions, for CAPI's condition utilities.
func (m *SimMachine) GetConditions() []metav1.Condition { return m.Status.Conditions }

// SetConditions sets the conditions, for CAPI's condition utilities.
func (m *SimMachine) SetConditions(conditions []metav1.Condition) { m.Status.Conditions = conditions }

// +kubebuilder:object:root=true

// SimMachineList is a list of SimMachines.
type SimMachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SimMachine `json:"items"`
}
