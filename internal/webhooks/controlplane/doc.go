// Package controlplane holds the admission webhooks of the control-plane provider's
// kinds, KThreesControlPlane and KThreesControlPlaneTemplate, and of the
// KThreesControlPlane scale subresource.
//
// Defaulting does two jobs. It fills what a control plane cannot run without (one
// replica, a "v" on the version, a RollingUpdate strategy with maxSurge 1), and it
// moves cluster-api-k3s's machine-template fields (machineTemplate.infrastructureRef
// with an apiVersion, machineTemplate.node*Timeout durations) to their Cluster API
// v1beta2 places, so that manifests written for cluster-api-k3s work unchanged. A
// deprecated field is only moved when the move loses nothing; otherwise it is left in
// place for validation to reject with both field paths, rather than dropped. The
// template's webhook moves its durations the same way. On a control plane that
// Cluster API's topology made, the machineTemplate.infrastructureRef copied from its
// KThreesControlPlaneTemplate is dropped instead: the ClusterClass names the
// infrastructure template there, and the template keeps the user's value.
//
// Fields kept only so that cluster-api-k3s's manifests are neither refused nor
// pruned, and that nothing reads (serverConfig.etcdProxyImage, a reference's uid,
// resourceVersion and fieldPath, the whole-object metadata fields of a template's
// spec.template.metadata, a template's infrastructureRef), get an admission warning
// each that says why they are ignored (warnings.go).
//
// Validation adds what the CRD schema cannot say: odd replica counts (k3s's embedded
// etcd needs a majority), k3s versions that parse, upgrades that go one minor version
// at a time and never down, a maxSurge of 0 only where etcd keeps its quorum,
// network settings that a running cluster cannot change, the KThreesConfigSpec rules
// of the bootstrap webhooks, and an immutable template spec.
package controlplane

// The generated configurations get their own names: the bootstrap provider's use
// controller-gen's defaults, and webhook configurations are cluster-scoped, so equal
// names would make one provider's configuration replace the other's wherever both
// are installed (the test harness installs both).
// +kubebuilder:webhookconfiguration:mutating=true,name=controlplane-mutating-webhook-configuration
// +kubebuilder:webhookconfiguration:mutating=false,name=controlplane-validating-webhook-configuration
