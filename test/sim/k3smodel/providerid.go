package k3smodel

import "strings"

// Who gives a k3s Node its spec.providerID, read from k3s v1.34.9, v1.35.4 and
// v1.36.2 (the same in all three):
//
//   - The kubelet, at registration, when it runs with --provider-id. k3s passes each
//     kubelet-arg on as a kubelet flag, a user's value replacing k3s's own for the same
//     flag (pkg/util/args.go, GetArgs; a leading "--" is dropped).
//   - k3s's embedded cloud controller, unless disable-cloud-controller is set: its
//     InstanceMetadata answers "k3s://" + the Node's name, but keeps a providerID the
//     Node already has (pkg/cloudprovider/instances.go). With it on, k3s itself runs
//     the kubelet with cloud-provider=external (pkg/daemons/agent/agent_linux.go,
//     kubeletArgs, the !DisableCCM branch).
//   - Otherwise an external cloud controller manager, which initializes only Nodes
//     whose kubelet runs with cloud-provider=external (the kubelet then taints them
//     node.cloudprovider.kubernetes.io/uninitialized until a cloud controller is done;
//     Kubernetes behaviour, not k3s's). Cluster API infrastructure providers ship such
//     controllers; the ID they set is the one the infrastructure reports.
//   - Nobody, when the embedded controller is off and the kubelet has no
//     cloud-provider=external and no provider-id: the Node keeps an empty providerID.
//
// An agent does not read disable-cloud-controller from its own configuration: it
// takes the servers' setting (pkg/agent/config/config.go, get:
// nodeConfig.AgentConfig.DisableCCM = controlConfig.DisableCCM, the control config
// being the one the server sends).

// EmbeddedCCMProviderIDPrefix is what k3s's embedded cloud controller puts before a
// Node's name (version.Program is "k3s").
const EmbeddedCCMProviderIDPrefix = "k3s://"

// NodeCloud is what decides a Node's providerID.
type NodeCloud struct {
	// EmbeddedCCM is true unless the cluster's servers set disable-cloud-controller.
	EmbeddedCCM bool
	// KubeletArgs are the kubelet-arg values, in order.
	KubeletArgs []string
	// ExternalCCMProviderID is what an external cloud controller would set: the
	// infrastructure's ID for the machine; "" when no such controller runs.
	ExternalCCMProviderID string
}

// kubeletArg is the effective value of a kubelet flag given as kubelet-arg, and
// whether it was given: the last one wins, as k3s builds the flags from a map.
func kubeletArg(args []string, name string) (string, bool) {
	value, found := "", false
	for _, a := range args {
		k, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if k == name {
			value, found = v, true
		}
	}
	return value, found
}

// ProviderID is the providerID the Node named nodeName ends up with; "" when nobody
// sets one.
func (c NodeCloud) ProviderID(nodeName string) string {
	if id, ok := kubeletArg(c.KubeletArgs, "provider-id"); ok && id != "" {
		return id
	}
	if c.EmbeddedCCM {
		return EmbeddedCCMProviderIDPrefix + nodeName
	}
	if cp, _ := kubeletArg(c.KubeletArgs, "cloud-provider"); cp == "external" {
		return c.ExternalCCMProviderID
	}
	return ""
}
