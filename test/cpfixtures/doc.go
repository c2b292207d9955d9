// Package cpfixtures builds the objects the control plane's decision tests reason
// about: server Machines, ready Nodes, the marks a MachineHealthCheck leaves, and
// control planes as a pass sees them. The tests of internal/controlplane and of its
// *plan packages share these builders so that a fixture exists once.
//
// It needs no apiserver and must stay so: the *plan packages' tests import it, and
// they run without one (serverplan's TestDecisionPackagesNeedNoAPIServer checks
// this package's imports too). So it imports no envtest, no client, no workload
// package, and nothing of the decision packages (whose own tests import it; an
// import back would be a cycle). Nodes are returned as plain maps, which Go assigns
// to workload.Nodes as they are.
package cpfixtures
