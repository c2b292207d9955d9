package specdiff

// InPlaceIgnoredMachineFields are the Machine spec fields (JSON names) an in-place
// update never counts as a change: CAPI propagates them to a Machine itself or they
// never change on one (its cluster, its bootstrap and infrastructure references, its
// provider ID), and the control plane writes the rest (minReadySeconds,
// readinessGates, deletion, taints) without any update. What remains of a Machine
// spec, its version and failure domain, is what an in-place update is about.
var InPlaceIgnoredMachineFields = []string{
	"clusterName", "bootstrap", "infrastructureRef", "providerID",
	"minReadySeconds", "readinessGates", "deletion", "taints",
}
