package cloudinit

import (
	"fmt"
	"strconv"
	"strings"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
)

const k3sConfigPath = "/etc/rancher/k3s/config.yaml"

// k3sOptions is k3s's config file: option name (the CLI flag without "--") to value.
// A map, so that the marshalled keys come out sorted and the file is stable.
type k3sOptions map[string]any

func (o k3sOptions) str(key, v string) {
	if v != "" {
		o[key] = v
	}
}

func (o k3sOptions) list(key string, v []string) {
	if len(v) > 0 {
		o[key] = v
	}
}

// renderK3sConfig writes the k3s config file for in.
func renderK3sConfig(in Input) ([]byte, error) {
	o, err := k3sConfigOptions(in)
	if err != nil {
		return nil, err
	}
	out, err := yaml.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("marshalling k3s config: %w", err)
	}
	return out, nil
}

// ServerOptions are the k3s options a joining server's config file holds for spec,
// without what comes from Secrets or the cluster (token, server URL, datastore,
// S3 CA): what the control plane compares to see whether k3s would let a new server
// join the running ones (k3s.CriticalChanges).
func ServerOptions(spec bootstrapv1.KThreesConfigSpec) (map[string]any, error) {
	return k3sConfigOptions(Input{Role: ServerJoin, Spec: spec})
}

// k3sConfigOptions maps the spec onto k3s options; doc.go has the table.
func k3sConfigOptions(in Input) (k3sOptions, error) {
	ac, sc := in.Spec.AgentConfig, in.Spec.ServerConfig
	o := k3sOptions{}
	o.str("token", in.Token)
	o.str("server", in.ServerURL)
	// k3s hands node-label to the kubelet, which will not start with a label it may
	// not set on its own Node.
	if reserved := k3s.ReservedNodeLabels(ac.NodeLabels); len(reserved) > 0 {
		return nil, fmt.Errorf("spec.agentConfig.nodeLabels: the kubelet refuses to start with labels in kubernetes.io or k8s.io it may not set: %s", strings.Join(reserved, ", "))
	}
	o.list("node-label", ac.NodeLabels)
	o.list("node-taint", nodeTaints(in))
	o.list("kubelet-arg", kubeletArgs(in))
	o.list("kube-proxy-arg", ac.KubeProxyArgs)
	o.str("node-name", ac.NodeName)
	// With registries set capk3s writes k3s's default path, so no option is needed.
	o.str("private-registry", ac.PrivateRegistry)

	if in.Role != Agent {
		if in.Datastore != nil {
			datastoreOptions(o, in.Datastore)
		} else {
			if in.Role == ServerInit {
				o["cluster-init"] = true
			}
			etcdOptions(o, sc.Etcd, in.EtcdS3)
		}
		o.str("agent-token", in.AgentToken)
		o.list("kube-apiserver-arg", sc.KubeAPIServerArgs)
		o.list("kube-controller-manager-arg", sc.KubeControllerManagerArgs)
		o.list("kube-scheduler-arg", sc.KubeSchedulerArgs)
		o.list("tls-san", dedupe(in.TLSSANs, sc.TLSSan))
		o.str("bind-address", sc.BindAddress)
		o.str("advertise-address", sc.AdvertiseAddress)
		o.str("cluster-cidr", sc.ClusterCidr)
		o.str("service-cidr", sc.ServiceCidr)
		o.str("cluster-dns", sc.ClusterDNS)
		o.str("cluster-domain", sc.ClusterDomain)
		o.list("disable", sc.DisableComponents)
		o.str("system-default-registry", sc.SystemDefaultRegistry)
		// Cluster API clusters bring their own cloud controller manager.
		if sc.DisableCloudController == nil || *sc.DisableCloudController {
			o["disable-cloud-controller"] = true
		}
		for _, p := range []struct{ key, field, value string }{
			{"https-listen-port", "httpsListenPort", sc.HTTPSListenPort},
			{"advertise-port", "advertisePort", sc.AdvertisePort},
		} {
			if p.value == "" {
				continue
			}
			// k3s wants a number here; a string would make it refuse to start.
			n, err := strconv.Atoi(p.value)
			if err != nil || n < 1 || n > 65535 {
				return nil, fmt.Errorf("spec.serverConfig.%s %q is not a port number", p.field, p.value)
			}
			o[p.key] = n
		}
	}
	if err := addExtraOptions(o, in); err != nil {
		return nil, err
	}
	return o, nil
}

// nodeTaints are the taints the kubelet registers its Node with (k3s hands node-taint
// to it as register-with-taints). Agents also get Cluster API's uninitialized taint, as
// CABPK gives workers: CAPI's Machine (and MachinePool) controller removes it once the
// Node is matched to its Machine and has the Machine's labels, so no workload lands on
// a Node before that. It is rendered, never stored in the spec: the taint is gone
// for good once removed, the kubelet applies it only when it creates the Node.
// Servers are not tainted, as CABPK taints no control-plane node: k3s's packaged
// components (CoreDNS, local-path, metrics-server) start on the first server and
// would otherwise wait for CAPI to reach the new cluster.
func nodeTaints(in Input) []string {
	taints := in.Spec.AgentConfig.NodeTaints
	if in.Role == Agent {
		taints = dedupe(taints, []string{clusterv1.NodeUninitializedTaint.ToString()})
	}
	return taints
}

// kubeletArgs puts the cloud-provider flag first so that a cloud-provider the user
// lists in kubeletArgs wins: the kubelet keeps the last value of a repeated flag.
func kubeletArgs(in Input) []string {
	sc := in.Spec.ServerConfig
	var args []string
	if !sc.DeprecatedDisableExternalCloudProvider {
		switch name := sc.CloudProviderName; {
		case name == nil:
			args = append(args, "cloud-provider=external")
		case *name != "":
			args = append(args, "cloud-provider="+*name)
		}
	}
	return append(args, in.Spec.AgentConfig.KubeletArgs...)
}

// dedupe concatenates the lists, keeping the first occurrence of each value.
func dedupe(lists ...[]string) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range lists {
		for _, v := range l {
			if v != "" && !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	return out
}
