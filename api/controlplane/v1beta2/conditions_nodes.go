package v1beta2

// NodesMatchMachines reports server Machines and Nodes that disagree in a way no wait
// mends. Set (False) only while some do; removed otherwise, and while the workload
// cluster cannot be read.
const (
	// NodesMatchMachinesCondition is False while a server's Node cannot be matched to
	// its Machine by providerID, or runs another k3s release than the Machine asks for.
	NodesMatchMachinesCondition = "NodesMatchMachines"

	// ProviderIDMismatchReason: a Node has another providerID than its Machine (k3s's
	// embedded cloud controller names Nodes k3s://<node-name>), or none; Cluster API
	// never sets the Machine's nodeRef. The message names the Machine, the Node and
	// both IDs.
	ProviderIDMismatchReason = "ProviderIDMismatch"

	// VersionMismatchReason: a Node runs another k3s release than its Machine asks for
	// (an air-gapped image runs the binary it carries). The message names both.
	VersionMismatchReason = "VersionMismatch"
)
