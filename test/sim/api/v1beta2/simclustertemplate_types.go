package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// SimClusterTemplateResource is what the SimCluster made from the template gets.
type SimClusterTemplateResource struct {
	// metadata is copied onto the SimCluster.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`
	// spec is the SimCluster's spec; its endpoint is best left empty, for the
	// simulator to choose one per cluster.
	// +optional
	Spec SimClusterSpec `json:"spec,omitempty,omitzero"`
}

// SimClusterTemplateSpec holds the template.
type SimClusterTemplateSpec struct {
	// template is the SimCluster to make.
	// +optional
	Template SimClusterTemplateResource `json:"template,omitempty,omitzero"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=simclustertemplates,scope=Namespaced,categories=cluster-api
// +kubebuilder:storageversion
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1beta2"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// SimClusterTemplate is the infrastructure cluster template of a ClusterClass on the
// simulator: Cluster API's topology controller makes each Cluster's SimCluster from it.
type SimClusterTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the template.
	// +optional
	Spec SimClusterTemplateSpec `json:"spec,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// SimClusterTemplateList is a list of SimClusterTemplates.
type SimClusterTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SimClusterTemplate `json:"items"`
}
