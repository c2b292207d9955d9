// Package v1beta2 is the simulator's infrastructure API: SimCluster, SimMachine and
// SimMachineTemplate, on Cluster API's v1beta2 infrastructure contract. The kinds are
// for tests and the sandbox only; they describe nothing about real machines beyond
// what the contract requires.
// +kubebuilder:object:generate=true
// +groupName=infrastructure.sim.capk3s.io
package v1beta2
