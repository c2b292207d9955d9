package v1beta2

// RegistrationMethod says which address joining servers and agents are given to
// reach the cluster: the Cluster's control-plane endpoint (a load balancer or a
// virtual IP in front of the servers), or the address of one ready server, for
// sites without either.
// +kubebuilder:validation:Enum=ControlPlaneEndpoint;InternalAddress;ExternalAddress
type RegistrationMethod string

const (
	// RegistrationControlPlaneEndpoint (the default) joins through the Cluster's
	// spec.controlPlaneEndpoint.
	RegistrationControlPlaneEndpoint RegistrationMethod = "ControlPlaneEndpoint"
	// RegistrationInternalAddress joins through a ready server's internal address
	// (its Machine's InternalIP, else InternalDNS).
	RegistrationInternalAddress RegistrationMethod = "InternalAddress"
	// RegistrationExternalAddress joins through a ready server's external address
	// (its Machine's ExternalIP, else ExternalDNS).
	RegistrationExternalAddress RegistrationMethod = "ExternalAddress"
)

// ByServerAddress says whether joiners are given a server's own address.
func (m RegistrationMethod) ByServerAddress() bool {
	return m == RegistrationInternalAddress || m == RegistrationExternalAddress
}

// RegistrationStatus is the server that joining machines are sent to, while
// spec.registrationMethod names a server address. The bootstrap provider renders
// https://<address>:<port> as the k3s server URL of every joining server and agent
// of the cluster. A machine keeps the URL it booted with; once joined, k3s's agent
// load balancer learns all servers from the cluster itself.
type RegistrationStatus struct {
	// machine is the chosen server's Machine.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Machine string `json:"machine"`

	// address is the chosen server's address, of the type the method names.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Address string `json:"address"`

	// port is the servers' k3s port: kthreesConfigSpec.serverConfig.httpsListenPort,
	// k3s's default 6443 when unset.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`
}
