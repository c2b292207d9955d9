// Package sim is an infrastructure provider whose machines behave like machines running
// k3s, for the end-to-end tests and the sandbox.
//
// A SimMachine reads its bootstrap data and checks it as k3s would (bootdata.go,
// checks.go); a failed check leaves the machine unjoined, as a real node would be.
// The first server starts the workload cluster's API: a real kube-apiserver and etcd
// (cluster_start.go, etcdstore.go) with the CAs in the bootstrap data, behind a front
// on the SimCluster's endpoint (front.go) that, as k3s on its one port, serves k3s's
// etcd snapshot API (supervisorapi.go) and hands everything else to the apiserver
// with the caller's identity, so the kubeconfig the control plane writes works as it
// is. Every machine then registers its Node with k3s's labels and annotations
// (node.go). etcd.go plays k3s's etcd member controller, and loses quorum, taking the
// workload API down, when too many members go at once. Snapshots hold the etcd's keys
// and a first server that restores one with cluster-reset brings them back, also on a
// cluster whose servers are all gone (etcdsnapshots.go, restore.go).
//
// A test makes a joined machine unhealthy with the SimMachine annotation
// infrastructure.sim.capk3s.io/node-ready (nodehealth.go). "false" is a kubelet that
// reports NotReady while k3s runs: the Node's Ready turns False, and a server's etcd
// member stays up, as the kubelet's container runtime may fail while k3s's server
// process, which runs etcd, does not. "unknown" is k3s stopped on the machine: nothing
// posts the Node's status, so its conditions turn Unknown (what Kubernetes' node
// lifecycle controller writes once heartbeats stop), and a server's etcd member, which
// lives in the same k3s process, is down and counts against quorum. The simulator
// plays the node lifecycle controller at once, with its taints, so that a test's
// timeouts start when it sets the annotation. "true", or removing the annotation,
// makes the Node Ready again and brings the member back up, unless quorum was lost
// meanwhile: that is for good in the simulator.
//
// A machine's kernel has WireGuard unless its spec says kernelWithoutWireGuard (also on
// a SimMachineTemplate's template and a SimMachinePool): there, a k3s that runs flannel
// with flannel-backend wireguard-native exits after each start, as real k3s does, and
// the machine never joins (flannel.go, k3smodel.CheckFlannelKernel).
//
// Every machine's k3s holds k3s's leaf certificates, renewed as k3s renews them when
// it restarts, and runs k3s's certificate monitor, which writes its Events on the
// Node (certs.go, certmonitor.go). A test dates the certificates with the SimMachine
// annotation infrastructure.sim.capk3s.io/certificates-issued-at, and shortens the
// monitor's 30 minutes with Provider.CertificateCheckInterval or the SimCluster
// annotation infrastructure.sim.capk3s.io/certificate-check-interval.
package sim
