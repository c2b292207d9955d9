package stack

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
)

// ClusterOptions describe a cluster on the simulated infrastructure.
type ClusterOptions struct {
	Namespace string
	Name      string
	// Servers is the KThreesControlPlane's replicas.
	Servers int32
	// Agents is the MachineDeployment's replicas; with 0 there is no MachineDeployment.
	Agents int32
	// Version is the k3s version, e.g. v1.35.4+k3s1.
	Version string
	// Format is the bootstrap data's format for servers and agents ("" is cloud-config).
	Format bootstrapv1.Format
	// Datastore, when set, names the Secret key holding the servers' external
	// datastore endpoint (spec.serverConfig.datastore.endpointSecret); nil is embedded
	// etcd.
	Datastore *bootstrapv1.SecretKeyReference
}

// Cluster is every object a user applies for one cluster.
type Cluster struct {
	Cluster             *clusterv1.Cluster
	SimCluster          *simv1.SimCluster
	ServerTemplate      *simv1.SimMachineTemplate
	ControlPlane        *controlplanev1.KThreesControlPlane
	AgentTemplate       *simv1.SimMachineTemplate
	AgentConfigTemplate *bootstrapv1.KThreesConfigTemplate
	// Workers is nil without agents.
	Workers *clusterv1.MachineDeployment
}

// PoolLabel marks the agents' Machines with their pool, for the MachineDeployment's
// selector.
const PoolLabel = "capk3s.io/pool"

// NewCluster builds the objects of a cluster: a Cluster on a SimCluster, a
// KThreesControlPlane of servers and, with agents, a MachineDeployment of agents.
func NewCluster(o ClusterOptions) *Cluster {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: o.Namespace, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: o.Name}}
	}
	simRef := func(kind, name string) clusterv1.ContractVersionedObjectReference {
		return clusterv1.ContractVersionedObjectReference{APIGroup: simv1.GroupVersion.Group, Kind: kind, Name: name}
	}
	c := &Cluster{
		SimCluster:     &simv1.SimCluster{ObjectMeta: meta(o.Name)},
		ServerTemplate: noWireGuard(&simv1.SimMachineTemplate{ObjectMeta: meta(o.Name + "-servers")}),
		ControlPlane: &controlplanev1.KThreesControlPlane{
			ObjectMeta: meta(o.Name + "-control-plane"),
			Spec: controlplanev1.KThreesControlPlaneSpec{
				Replicas: ptr.To(o.Servers),
				Version:  o.Version,
				MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{
					Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
						InfrastructureRef: simRef("SimMachineTemplate", o.Name+"-servers"),
					},
				},
				KThreesConfigSpec: bootstrapv1.KThreesConfigSpec{
					Format: o.Format,
					ServerConfig: bootstrapv1.KThreesServerConfig{
						DisableComponents: []string{"traefik"},
						// A k3s option without a typed field: the simulator checks it
						// against the same option list as the webhooks. Its value is
						// k3s's default backend, which every Linux kernel runs. Not
						// wireguard-native: on a kernel without WireGuard (the real-k3s
						// test machines', and the demo's machines below) real k3s exits a
						// few seconds after each start, as flannel cannot create its
						// interface (k3s pkg/agent/flannel/setup.go Run, v1.34-v1.36).
						ExtraConfig: map[string]apiextensionsv1.JSON{"flannel-backend": {Raw: []byte(`"vxlan"`)}},
					},
					AgentConfig: bootstrapv1.KThreesAgentConfig{NodeLabels: []string{"capk3s.io/role=server"}},
				},
			},
		},
	}
	if o.Datastore != nil {
		c.ControlPlane.Spec.KThreesConfigSpec.ServerConfig.Datastore = &bootstrapv1.Datastore{EndpointSecret: *o.Datastore}
	}
	c.Cluster = &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name},
		Spec: clusterv1.ClusterSpec{
			InfrastructureRef: simRef("SimCluster", o.Name),
			ControlPlaneRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: controlplanev1.GroupVersion.Group, Kind: "KThreesControlPlane", Name: c.ControlPlane.Name,
			},
		},
	}
	if o.Agents == 0 {
		return c
	}
	c.AgentTemplate = noWireGuard(&simv1.SimMachineTemplate{ObjectMeta: meta(o.Name + "-agents")})
	c.AgentConfigTemplate = &bootstrapv1.KThreesConfigTemplate{
		ObjectMeta: meta(o.Name + "-agents"),
		Spec: bootstrapv1.KThreesConfigTemplateSpec{Template: bootstrapv1.KThreesConfigTemplateResource{
			Spec: bootstrapv1.KThreesConfigSpec{Format: o.Format, AgentConfig: bootstrapv1.KThreesAgentConfig{
				NodeLabels: []string{"capk3s.io/role=agent"},
			}},
		}},
	}
	selector := map[string]string{clusterv1.ClusterNameLabel: o.Name, PoolLabel: "agents"}
	c.Workers = &clusterv1.MachineDeployment{
		ObjectMeta: meta(o.Name + "-agents"),
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: o.Name,
			Replicas:    ptr.To(o.Agents),
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
					ClusterName: o.Name,
					Version:     o.Version,
					Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: bootstrapv1.GroupVersion.Group, Kind: "KThreesConfigTemplate", Name: c.AgentConfigTemplate.Name,
					}},
					InfrastructureRef: simRef("SimMachineTemplate", c.AgentTemplate.Name),
				},
			},
		},
	}
	return c
}

// noWireGuard gives the template's machines a kernel without WireGuard, as the
// machines this project's real-k3s tests run on have: a cluster whose k3s needs
// WireGuard (flannel-backend wireguard-native) fails on them in the simulator as it
// would on such a real machine.
func noWireGuard(t *simv1.SimMachineTemplate) *simv1.SimMachineTemplate {
	t.Spec.Template.Spec.KernelWithoutWireGuard = true
	return t
}

// Objects lists the objects in the order to create them: what is referenced first,
// the Cluster last.
func (c *Cluster) Objects() []client.Object {
	objs := []client.Object{c.SimCluster, c.ServerTemplate, c.ControlPlane}
	if c.Workers != nil {
		objs = append(objs, c.AgentTemplate, c.AgentConfigTemplate, c.Workers)
	}
	return append(objs, c.Cluster)
}
