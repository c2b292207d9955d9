package stack

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
)

// AgentPool is a MachinePool of k3s agents on the simulated infrastructure: the pool,
// the one KThreesConfig all its instances boot from, and its SimMachinePool.
type AgentPool struct {
	MachinePool *clusterv1.MachinePool
	Config      *bootstrapv1.KThreesConfig
	SimPool     *simv1.SimMachinePool
}

// NewAgentPool builds (but does not create) a pool of replicas agents at version for
// an existing cluster.
func NewAgentPool(namespace, cluster, name, version string, replicas int32) *AgentPool {
	meta := metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: cluster}}
	p := &AgentPool{
		Config: &bootstrapv1.KThreesConfig{ObjectMeta: *meta.DeepCopy(), Spec: bootstrapv1.KThreesConfigSpec{
			AgentConfig: bootstrapv1.KThreesAgentConfig{NodeLabels: []string{"capk3s.io/role=agent", PoolLabel + "=" + name}},
		}},
		SimPool: &simv1.SimMachinePool{ObjectMeta: *meta.DeepCopy()},
	}
	p.MachinePool = &clusterv1.MachinePool{
		ObjectMeta: *meta.DeepCopy(),
		Spec: clusterv1.MachinePoolSpec{
			ClusterName: cluster,
			Replicas:    ptr.To(replicas),
			Template: clusterv1.MachineTemplateSpec{
				Spec: clusterv1.MachineSpec{
					ClusterName: cluster,
					Version:     version,
					Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: bootstrapv1.GroupVersion.Group, Kind: "KThreesConfig", Name: name,
					}},
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: simv1.GroupVersion.Group, Kind: "SimMachinePool", Name: name,
					},
				},
			},
		},
	}
	return p
}

// Objects lists the pool's objects in the order to create them.
func (p *AgentPool) Objects() []client.Object {
	return []client.Object{p.Config, p.SimPool, p.MachinePool}
}
