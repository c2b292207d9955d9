// Package lifecycle runs a KThreesControlPlane through its life on real parts: the
// harness's kube-apiserver and garbage collector, CAPI's own Cluster and Machine
// reconcilers in-process, both capk3s providers, and a workload cluster API that
// trusts the cluster's CAs. A small infrastructure stand-in (infra_test.go) plays the
// machines: it marks them provisioned and registers their Ready nodes.
package lifecycle
