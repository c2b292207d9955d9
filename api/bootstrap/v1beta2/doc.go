// Package v1beta2 holds the KThreesConfig and KThreesConfigTemplate API
// (bootstrap.cluster.x-k8s.io/v1beta2): what a Machine's k3s server or agent is
// configured with. Spec field names are those of cluster-api-k3s, so existing
// manifests keep working; status follows the Cluster API v1beta2 bootstrap contract.
//
// The package only declares types and registers them in a scheme; defaulting and
// validation live in internal/webhooks, reconcilers in internal/bootstrap.
//
// +kubebuilder:object:generate=true
// +groupName=bootstrap.cluster.x-k8s.io
package v1beta2
