package realk3s

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	netnsv1 "github.com/capk3s/capk3s/test/realk3s/api/v1beta2"
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

// poolLabel marks the agents' Machines with their pool, for the MachineDeployment's
// selector.
const poolLabel = "capk3s.io/pool"

// withoutImages are k3s's packaged components whose images no machine here can pull;
// the scenarios' own workload image is imported instead.
var withoutImages = []string{"traefik", "servicelb", "metrics-server", "local-storage", "coredns"}

// hostKubeletArgs are what the kubelets need on this layer's host, whose kernel runs
// cgroup v1: kubelet 1.35+ refuses to start there unless told to go on (a user on
// such a host sets the same).
var hostKubeletArgs = []string{"fail-cgroupv1=false"}

// newCluster builds a cluster as a user would write it for machines whose image
// carries k3s (air-gapped install): servers from a KThreesControlPlane and agents
// from a MachineDeployment.
func newCluster(o clusterOptions) *realCluster {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: o.namespace, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: o.name}}
	}
	ref := func(kind, name string) clusterv1.ContractVersionedObjectReference {
		return clusterv1.ContractVersionedObjectReference{APIGroup: netnsv1.GroupVersion.Group, Kind: kind, Name: name}
	}
	c := &realCluster{
		infraCluster:   &netnsv1.NetnsCluster{ObjectMeta: meta(o.name)},
		serverTemplate: &netnsv1.NetnsMachineTemplate{ObjectMeta: meta(o.name + "-servers")},
		controlPlane: &controlplanev1.KThreesControlPlane{
			ObjectMeta: meta(o.name + "-control-plane"),
			Spec: controlplanev1.KThreesControlPlaneSpec{
				Replicas: ptr.To(o.servers),
				Version:  o.version,
				MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{
					Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{InfrastructureRef: ref("NetnsMachineTemplate", o.name+"-servers")},
				},
				KThreesConfigSpec: bootstrapv1.KThreesConfigSpec{
					ServerConfig: bootstrapv1.KThreesServerConfig{DisableComponents: withoutImages},
					AgentConfig: bootstrapv1.KThreesAgentConfig{AirGapped: true, NodeLabels: []string{"capk3s.io/role=server"},
						KubeletArgs: hostKubeletArgs},
				},
			},
		},
	}
	c.cluster = &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.namespace, Name: o.name},
		Spec: clusterv1.ClusterSpec{
			InfrastructureRef: ref("NetnsCluster", o.name),
			ControlPlaneRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: controlplanev1.GroupVersion.Group, Kind: "KThreesControlPlane", Name: c.controlPlane.Name,
			},
		},
	}
	if o.agents == 0 {
		return c
	}
	c.agentTemplate = &netnsv1.NetnsMachineTemplate{ObjectMeta: meta(o.name + "-agents")}
	c.agentConfig = &bootstrapv1.KThreesConfigTemplate{
		ObjectMeta: meta(o.name + "-agents"),
		Spec: bootstrapv1.KThreesConfigTemplateSpec{Template: bootstrapv1.KThreesConfigTemplateResource{
			Spec: bootstrapv1.KThreesConfigSpec{AgentConfig: bootstrapv1.KThreesAgentConfig{
				AirGapped: true, NodeLabels: []string{"capk3s.io/role=agent"}, KubeletArgs: hostKubeletArgs,
			}},
		}},
	}
	selector := map[string]string{clusterv1.ClusterNameLabel: o.name, poolLabel: "agents"}
	c.workers = &clusterv1.MachineDeployment{
		ObjectMeta: meta(o.name + "-agents"),
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: o.name,
			Replicas:    ptr.To(o.agents),
			Selector:    metav1.LabelSelector{MatchLabels: selector},
			Rollout: clusterv1.MachineDeploymentRolloutSpec{Strategy: clusterv1.MachineDeploymentRolloutStrategy{
				Type: clusterv1.RollingUpdateMachineDeploymentStrategyType,
				RollingUpdate: clusterv1.MachineDeploymentRolloutStrategyRollingUpdate{
					MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
				},
			}},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{Labels: selector},
				Spec: clusterv1.MachineSpec{
					ClusterName: o.name,
					Version:     o.version,
					Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: bootstrapv1.GroupVersion.Group, Kind: "KThreesConfigTemplate", Name: c.agentConfig.Name,
					}},
					InfrastructureRef: ref("NetnsMachineTemplate", c.agentTemplate.Name),
				},
			},
		},
	}
	return c
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
