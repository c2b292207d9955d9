package e2e

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestHARollingUpgrade: a cluster made by Cluster API's topology controller from the
// published ClusterClass, its variables (a k3s option, a registry mirror) patched into
// the control plane, the agents' template and every machine's bootstrap data. It
// scales 1 -> 3 servers through topology.controlPlane.replicas; then topology.version
// replaces every server, one at a time, without losing etcd quorum (the simulator
// fails the wait at once if it does) and without touching the token, and then the
// agent.
func TestHARollingUpgrade(t *testing.T) {
	s := newScenario(t, 1, 1)
	topo := s.useTopology(1, 1)
	s.createTopology(topo)
	s.waitServers(1, oldVersion)
	s.waitAgents(1)
	s.checkTopologyPatches()

	s.patchTopology(func(tp *clusterv1.Topology) { tp.ControlPlane.Replicas = ptr.To[int32](3) })
	s.waitServers(3, oldVersion)
	before := s.serverNames()
	agentsBefore := s.agentNames()
	value := string(s.tokenSecret().Data["value"])

	s.patchTopology(func(tp *clusterv1.Topology) { tp.Version = newVersion })
	s.waitServers(3, newVersion)
	s.eventually("the topology to upgrade the agents", func(ctx context.Context) (bool, string, error) {
		md := &clusterv1.MachineDeployment{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s.objs.Workers), md); err != nil {
			return false, "", err
		}
		return md.Spec.Template.Spec.Version == newVersion, "MachineDeployment at " + md.Spec.Template.Spec.Version, nil
	})
	s.waitAgents(1)

	if kept := s.serverNames().Intersection(before); kept.Len() > 0 {
		t.Errorf("servers not replaced by the upgrade: %v", sets.List(kept))
	}
	if kept := s.agentNames().Intersection(agentsBefore); kept.Len() > 0 {
		t.Errorf("agents not replaced by the upgrade: %v", sets.List(kept))
	}
	nodes := s.nodes()
	if len(nodes) != 4 {
		t.Errorf("workload cluster has %d Nodes after the upgrade, want 4", len(nodes))
	}
	for name, n := range nodes {
		if n.Status.NodeInfo.KubeletVersion != newVersion {
			t.Errorf("Node %s runs %s after the upgrade", name, n.Status.NodeInfo.KubeletVersion)
		}
	}
	// The new machines' bootstrap data still carries the variables.
	s.checkTopologyPatches()
	if simulator.QuorumLost(s.key) {
		t.Error("etcd lost quorum during the upgrade")
	}
	if got := string(s.tokenSecret().Data["value"]); got != value {
		t.Error("the token's value changed during the upgrade")
	}
	s.token.check(t)
}
