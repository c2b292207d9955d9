package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// SimClusterFinalizer lets the simulator stop the workload cluster's API before the
// SimCluster goes.
const SimClusterFinalizer = "simcluster.infrastructure.sim.capk3s.io"

// SimClusterSpec is the simulated cluster's infrastructure.
type SimClusterSpec struct {
	// controlPlaneEndpoint is where the workload cluster's API listens: the simulator
	// picks a free port on 127.0.0.1 when it is empty.
	// +optional
	ControlPlaneEndpoint clusterv1.APIEndpoint `json:"controlPlaneEndpoint,omitempty,omitzero"`
}

// SimClusterInitializationStatus is the contract's provisioning flag.
// +kubebuilder:validation:MinProperties=1
type SimClusterInitializationStatus struct {
	// provisioned is true once the endpoint is chosen.
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// SimClusterStatus is what the simulator observed.
type SimClusterStatus struct {
	// initialization is the contract's provisioning status.
	// +optional
	Initialization SimClusterInitializationStatus `json:"initialization,omitempty,omitzero"`

	// conditions: Ready, and WorkloadAPIAvailable once the first server has started
	// the workload cluster's API.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// etcdMembers are the names of the simulated etcd members, sorted.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	EtcdMembers []string `json:"etcdMembers,omitempty"`

	// datastore is the external datastore a datastore cluster's servers run on (its
	// URL without credentials), in place of etcd members; empty with etcd.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Datastore string `json:"datastore,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=simclusters,scope=Namespaced,categories=cluster-api
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta2"
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']"
// +kubebuilder:printcolumn:name="Endpoint",type="string",JSONPath=".spec.controlPlaneEndpoint.port"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// SimCluster is a simulated cluster's infrastructure: its control-plane endpoint.
type SimCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired infrastructure.
	// +optional
	Spec SimClusterSpec `json:"spec,omitempty,omitzero"`
	// status is what the simulator observed.
	// +optional
	Status SimClusterStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the conditions, for CAPI's condition utilities.
func (c *SimCluster) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions sets the conditions, for CAPI's condition utilities.
func (c *SimCluster) SetConditions(conditions []metav1.Condition) { c.Status.Conditions = conditions }

// +kubebuilder:object:root=true

// SimClusterList is a list of SimClusters.
type SimClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SimCluster `json:"items"`
}
