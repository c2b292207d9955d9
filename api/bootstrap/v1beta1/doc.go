// Package v1beta1 is the KThreesConfig and KThreesConfigTemplate API at
// bootstrap.cluster.x-k8s.io/v1beta1, field for field as cluster-api-k3s v0.3 served
// it, so that its manifests and stored objects keep working. It is served but not
// stored and is deprecated: v1beta2 is the hub and the storage version, and
// internal/conversion converts between the two without loss.
//
// +kubebuilder:object:generate=true
// +groupName=bootstrap.cluster.x-k8s.io
package v1beta1
