// Command bench measures capk3s at scale, side by side with CAPI's kubeadm providers
// (KubeadmControlPlane + KubeadmConfig) on exactly the same wiring: one process, one
// real kube-apiserver + etcd (the tests' envtest harness), CAPI core's reconcilers with
// the settings CAPI's own main.go uses, one ClusterCache, and CAPI's in-memory
// infrastructure backend (DevCluster / DevMachine), whose workload clusters are
// in-memory API servers. It creates N clusters, waits until each is Available with its
// control plane's Machines Ready, watches an idle window, and reports what it took:
// times, management API requests by verb and resource, conflicts, heap and the
// apiserver's memory. docs/performance.md says how to read the figures.
//
// It lives in its own module so that the benchmark-only dependencies (the kubeadm
// providers and the in-memory backend) stay out of capk3s's go.mod.
package main
