package k3smodel

// Flannel backends by the names k3s's flannel-backend flag takes
// (pkg/agent/flannel/flannel.go, v1.34.9, v1.35.4, v1.36.2). BackendVXLAN is the
// flag's default (pkg/cli/cmds/server.go, `Value: "vxlan"`).
const (
	BackendNone            = "none"
	BackendVXLAN           = "vxlan"
	BackendWireguardNative = "wireguard-native"
)

// FlannelExitMessage is what k3s logs when flannel's WireGuard backend cannot create
// its interface, as k3s's shutdown request wraps it (read at the commits in Minors,
// the same in v1.34, v1.35 and v1.36):
//   - flannel's wireguard backend (github.com/flannel-io/flannel v0.28.4, the version
//     k3s's go.mod pins: pkg/backend/wireguard/wireguard.go RegisterNetwork ->
//     createWGDev -> device.go ensureLink) adds a link of type "wireguard" and wraps
//     the kernel's refusal as "could not create wireguard interface: %w"; a kernel
//     without WireGuard answers EOPNOTSUPP, "operation not supported" (what
//     `ip link add ... type wireguard` shows as "Unknown device type");
//   - k3s's flannel() (pkg/agent/flannel/flannel.go) wraps RegisterNetwork's error
//     as "failed to register flannel network";
//   - Run (pkg/agent/flannel/setup.go) runs flannel() in a goroutine and turns its
//     error into signals.RequestShutdown("flannel exited: ..."), which cancels k3s's
//     context: the whole k3s process (kubelet, and on a server the apiserver and
//     etcd) stops and exits with an error.
const FlannelExitMessage = "flannel exited: failed to register flannel network: could not create wireguard interface: operation not supported"

// RestartNote is how the machine's service manager treats an exiting k3s: the unit
// k3s's install.sh writes has Restart=always and RestartSec=5s (install.sh at the
// commits in Minors), so k3s starts again five seconds after each exit, and exits
// again the same way.
const RestartNote = "k3s.service (Restart=always, RestartSec=5s) restarts it, and it exits again, for as long as the machine runs"

// RunsFlannel tells whether a node's k3s runs flannel with backend: every agent, and
// every server that runs its agent (a server with disable-agent runs
// agent.RunStandalone, without containerd, kubelet or CNI: pkg/cli/server/server.go),
// unless the backend is "none" (pkg/executor/embed/embed.go, CNI). An agent runs the
// backend its server gives it, not one of its own (pkg/agent/config/config.go:
// Flannel.Backend is controlConfig.FlannelBackend, read from the server); a server
// runs its own flag's. The same in v1.34, v1.35 and v1.36.
func RunsFlannel(role string, disableAgent bool, backend string) bool {
	if role == RoleServer && disableAgent {
		return false
	}
	return backend != BackendNone
}

// CheckFlannelKernel is what becomes of a node's k3s whose flannel runs backend on a
// kernel with or without WireGuard: with wireguard-native and no WireGuard, k3s exits
// (an *ExitError with FlannelExitMessage), again after every restart. flannel starts
// late in k3s's start: after the apiserver is ready, the kubelet registered the Node
// and the Node got its PodCIDR (pkg/agent/run.go startNetwork, setup.go
// waitForPodCIDR), so k3s dies a few seconds after each start, not at once. Every
// other backend needs no kernel feature this model tracks. A flannel-conf file
// replacing k3s's backend configuration (--flannel-conf) is not played.
func CheckFlannelKernel(role string, disableAgent bool, backend string, kernelHasWireGuard bool) error {
	if !RunsFlannel(role, disableAgent, backend) || backend != BackendWireguardNative || kernelHasWireGuard {
		return nil
	}
	return &ExitError{Role: role, Reason: FlannelExitMessage + " (flannel-backend wireguard-native on a kernel without WireGuard); " + RestartNote}
}
