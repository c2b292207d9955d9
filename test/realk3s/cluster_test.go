package realk3s

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	netnsv1 "github.com/capk3s/capk3s/test/realk3s/api/v1beta2"
	"github.com/capk3s/capk3s/test/stack"
)

func stackControllerOptions() controller.Options {
	return controller.Options{MaxConcurrentReconciles: 4}
}

// clusterOptions describe a cluster on the layer's machines.
type clusterOptions struct {
	namespace, name string
	servers, agents int32
	version         string
}

// realCluster is every object a user applies for one cluster.
type realCluster struct {
	cluster        *clusterv1.Cluster
	infraCluster   *netnsv1.NetnsCluster
	serverTemplate *netnsv1.NetnsMachineTemplate
	controlPlane   *controlplanev1.KThreesControlPlane
	agentTemplate  *netnsv1.NetnsMachineTemplate
	agentConfig    *bootstrapv1.KThreesConfigTemplate
	workers        *clusterv1.MachineDeployment
}

// withoutImages are k3s's packaged components whose images no machine here can pull;
// the scenarios' own workload image is imported instead.
var withoutImages = []string{"traefik", "servicelb", "metrics-server", "local-storage", "coredns"}

// hostKubeletArgs are what the kubelets need on this layer's host, whose kernel runs
// cgroup v1: kubelet 1.35+ refuses to start there unless told to go on (a user on
// such a host sets the same).
var hostKubeletArgs = []string{"fail-cgroupv1=false"}

// newCluster builds a cluster as the simulator's scenarios and the sandbox's demo
// do (test/stack.NewCluster: the same KThreesControlPlane, agents' config and
// MachineDeployment), on the layer's infrastructure kinds, with what these machines
// need on top: k3s from the image (air-gapped install), without the packaged
// components whose images cannot be pulled, and kubelets that run on cgroup v1.
func newCluster(o clusterOptions) *realCluster {
	sc := stack.NewCluster(stack.ClusterOptions{Namespace: o.namespace, Name: o.name, Servers: o.servers, Agents: o.agents, Version: o.version})
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: o.namespace, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: o.name}}
	}
	ref := func(kind, name string) clusterv1.ContractVersionedObjectReference {
		return clusterv1.ContractVersionedObjectReference{APIGroup: netnsv1.GroupVersion.Group, Kind: kind, Name: name}
	}
	c := &realCluster{
		cluster:        sc.Cluster,
		infraCluster:   &netnsv1.NetnsCluster{ObjectMeta: meta(o.name)},
		serverTemplate: &netnsv1.NetnsMachineTemplate{ObjectMeta: meta(o.name + "-servers")},
		controlPlane:   sc.ControlPlane,
	}
	c.cluster.Spec.InfrastructureRef = ref("NetnsCluster", c.infraCluster.Name)
	c.controlPlane.Spec.MachineTemplate.Spec.InfrastructureRef = ref("NetnsMachineTemplate", c.serverTemplate.Name)
	cp := &c.controlPlane.Spec.KThreesConfigSpec
	cp.ServerConfig.DisableComponents = withoutImages
	forThisHost(&cp.AgentConfig)
	if o.agents == 0 {
		return c
	}
	c.agentTemplate = &netnsv1.NetnsMachineTemplate{ObjectMeta: meta(o.name + "-agents")}
	c.agentConfig, c.workers = sc.AgentConfigTemplate, sc.Workers
	forThisHost(&c.agentConfig.Spec.Template.Spec.AgentConfig)
	c.workers.Spec.Template.Spec.InfrastructureRef = ref("NetnsMachineTemplate", c.agentTemplate.Name)
	return c
}

// forThisHost is what every machine's k3s needs here: k3s comes with the image, and
// the host runs cgroup v1.
func forThisHost(a *bootstrapv1.KThreesAgentConfig) {
	a.AirGapped = true
	a.KubeletArgs = append(a.KubeletArgs, hostKubeletArgs...)
}

// objects lists the objects in the order to create them: what is referenced first,
// the Cluster last.
func (c *realCluster) objects() []client.Object {
	objs := []client.Object{c.infraCluster, c.serverTemplate, c.controlPlane}
	if c.workers != nil {
		objs = append(objs, c.agentTemplate, c.agentConfig, c.workers)
	}
	return append(objs, c.cluster)
}
