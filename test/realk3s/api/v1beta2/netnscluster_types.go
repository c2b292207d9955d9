package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// NetnsClusterFinalizer lets the provider close the cluster's load balancer before
// the NetnsCluster goes.
const NetnsClusterFinalizer = "netnscluster.infrastructure.netns.capk3s.io"

// NetnsClusterSpec is the cluster's infrastructure.
type NetnsClusterSpec struct {
	// controlPlaneEndpoint is the load balancer in front of the servers' 6443: the
	// provider sets it to a port on the host's side of the machines' bridge.
	// +optional
	ControlPlaneEndpoint clusterv1.APIEndpoint `json:"controlPlaneEndpoint,omitempty,omitzero"`
}

// NetnsClusterInitializationStatus is the contract's provisioning flag.
// +kubebuilder:validation:MinProperties=1
type NetnsClusterInitializationStatus struct {
	// provisioned is true once the load balancer listens.
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// NetnsClusterStatus is what the provider observed.
type NetnsClusterStatus struct {
	// initialization is the contract's provisioning status.
	// +optional
	Initialization NetnsClusterInitializationStatus `json:"initialization,omitempty,omitzero"`
	// backends are the server addresses the load balancer sends connections to.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	Backends []string `json:"backends,omitempty"`
	// conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=netnsclusters,scope=Namespaced,categories=cluster-api
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta2"
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']"
// +kubebuilder:printcolumn:name="Host",type="string",JSONPath=".spec.controlPlaneEndpoint.host"
// +kubebuilder:printcolumn:name="Port",type="string",JSONPath=".spec.controlPlaneEndpoint.port"

// NetnsCluster is a real-k3s test cluster's infrastructure: its load balancer.
type NetnsCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired infrastructure.
	// +optional
	Spec NetnsClusterSpec `json:"spec,omitempty,omitzero"`
	// status is what the provider observed.
	// +optional
	Status NetnsClusterStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the conditions, for CAPI's condition utilities.
func (c *NetnsCluster) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions sets the conditions, for CAPI's condition utilities.
func (c *NetnsCluster) SetConditions(conditions []metav1.Condition) {
	c.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// NetnsClusterList is a list of NetnsClusters.
type NetnsClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NetnsCluster `json:"items"`
}
