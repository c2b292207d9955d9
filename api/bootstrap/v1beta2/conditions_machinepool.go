package v1beta2

// Reasons of DataSecretAvailable for a KThreesConfig that a MachinePool owns.
const (
	// ServerInMachinePoolReason: the config's MachinePool asks for k3s servers (its
	// machine template carries the control-plane label). A MachinePool's machines run
	// agents only: servers are the control plane's Machines, each with its own etcd
	// member, which a pool's anonymous instances cannot be.
	ServerInMachinePoolReason = "ServerInMachinePool"
)
