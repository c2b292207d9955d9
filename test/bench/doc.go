// Command bench measures capk3s at scale, side by side with CAPI's kubeadm providers
// (KubeadmControlPlane + KubeadmConfig) on exactly the same wiring: one process, one
// real kube-apiserver + etcd (the tests' envtest harness), CAPI core's reconcilers with
// the settings CAPI's own main.go uses, one ClusterCache, and CAPI's in-memory
// infrastructure backend (DevCluster / DevMachine), whose workload clusters are
// in-memory API servers. It creates N clusters (-servers control-plane machines and a
// MachineDeployment of -agents workers each), waits until each is Available with all its
// Machines Ready, watches an idle window, optionally upgrades every cluster at once
// (-upgrade: control plane, then MachineDeployment), and reports what each phase took:
// times, management API requests by verb, resource and controller, conflicts, heap and
// the apiserver's memory. A k3s stand-in writes what k3s would on the workload Nodes
// (k3snode.go, etcdmodel.go). docs/performance.md says how to read the figures.
//
// It lives in its own module so that the benchmark-only dependencies (the kubeadm
// providers and the in-memory backend) stay out of capk3s's go.mod.
package main
