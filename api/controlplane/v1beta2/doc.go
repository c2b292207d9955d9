// Package v1beta2 holds the KThreesControlPlane and KThreesControlPlaneTemplate API
// (controlplane.cluster.x-k8s.io/v1beta2). Spec field names are those of
// cluster-api-k3s where they exist; the machine template and status follow the
// Cluster API v1beta2 control-plane contract.
//
// The package only declares types and registers them in a scheme; defaulting and
// validation live in internal/webhooks, the reconciler in internal/controlplane.
//
// +kubebuilder:object:generate=true
// +groupName=controlplane.cluster.x-k8s.io
package v1beta2
