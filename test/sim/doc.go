// Package sim is an infrastructure provider whose machines behave like machines running
// k3s, for the end-to-end tests and the sandbox.
//
// A SimMachine reads its bootstrap data and checks it as k3s would (bootdata.go,
// checks.go); a failed check leaves the machine unjoined, as a real node would be.
// The first server starts the workload cluster's API: a real kube-apiserver and etcd
// whose serving certificate is signed by the CA in the bootstrap data, listening on
// the SimCluster's endpoint, so the kubeconfig the control plane writes works as it
// is (cluster.go). Every machine then registers its Node with k3s's labels and
// annotations (node.go). etcd.go plays k3s's etcd member controller, and loses
// quorum, taking the workload API down, when too many members go at once.
package sim
