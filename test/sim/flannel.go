package sim

import "github.com/capk3s/capk3s/test/sim/k3smodel"

// ownFlannelBackend is the flannel-backend a server's k3s runs with: its own option
// as k3s read it (readAsK3s, drop-ins included), or, for data not read that way,
// config.yaml's, or k3s's default.
func (b *bootData) ownFlannelBackend() string {
	if b.flannelBackend != "" {
		return b.flannelBackend
	}
	if v := b.str("flannel-backend"); v != "" {
		return v
	}
	return k3smodel.BackendVXLAN
}

// checkFlannelKernel plays the machine's k3s starting flannel on its kernel
// (k3smodel.CheckFlannelKernel): a server runs its own backend, an agent the one its
// cluster's servers hand it (the first server's: every server of a cluster the
// simulator let form holds the same, as flannel-backend is a critical setting).
//
// Real k3s dies only once flannel starts, which is after the apiserver is up and the
// Node is registered with its PodCIDR, and comes back five seconds later
// (Restart=always): a first server's API and a machine's Node exist in bursts of a
// few seconds. The simulator plays the machine as one that never joins (no Node, not
// provisioned; the first server's API, already started by then, stays up), the
// control plane's lasting view of it: no Node that stays Ready, a machine that never
// comes up. The check is made after the join checks and just before the Node would
// register, so that a machine k3s refuses earlier reports that refusal instead.
func (b *bootData) checkFlannelKernel(s secrets, kernelWithoutWireGuard bool) error {
	role := b.install.role
	backend := s.flannelBackend
	if role == roleServer || backend == "" {
		backend = b.ownFlannelBackend()
	}
	return k3smodel.CheckFlannelKernel(role, b.disableAgent, backend, !kernelWithoutWireGuard)
}
