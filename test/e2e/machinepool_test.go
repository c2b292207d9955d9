package e2e

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
	"github.com/capk3s/capk3s/test/stack"
)

// TestMachinePoolScaleAndUpgrade: a MachinePool of agents, whose instances boot from
// the pool's one data Secret, scales 2 -> 4 -> 1 and is upgraded. Every instance's
// join is checked by the simulator (token, CA pin, server URL); after the upgrade the
// instances run the new version, booted from the same data Secret updated in place,
// and the token never changed.
func TestMachinePoolScaleAndUpgrade(t *testing.T) {
	s := newScenario(t, 1, 0)
	s.create()
	s.waitServers(1, oldVersion)

	pool := stack.NewAgentPool(s.ns, s.key.Name, "pool", oldVersion, 2)
	for _, o := range pool.Objects() {
		s.must(fmt.Sprintf("creating %T %s", o, o.GetName()), env.Client.Create(s.ctx, o))
	}
	s.waitPool(pool, 2, oldVersion)
	data := &corev1.Secret{}
	s.must("reading the pool's data Secret", env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: s.poolDataSecretName(pool)}, data))

	s.patchPool(pool, func(mp *clusterv1.MachinePool) { mp.Spec.Replicas = ptr.To[int32](4) })
	s.waitPool(pool, 4, oldVersion)
	s.patchPool(pool, func(mp *clusterv1.MachinePool) { mp.Spec.Replicas = ptr.To[int32](1) })
	s.waitPool(pool, 1, oldVersion)
	before := s.poolNodes(pool)

	s.patchPool(pool, func(mp *clusterv1.MachinePool) { mp.Spec.Template.Spec.Version = newVersion })
	s.waitPool(pool, 1, newVersion)

	if kept := s.poolNodes(pool).Intersection(before); kept.Len() > 0 {
		t.Errorf("instances not replaced by the upgrade: %v", sets.List(kept))
	}
	if name := s.poolDataSecretName(pool); name != data.Name {
		t.Errorf("the pool's data Secret is %s after the upgrade, was %s", name, data.Name)
	}
	after := &corev1.Secret{}
	s.must("reading the pool's data Secret", env.Client.Get(s.ctx, client.ObjectKeyFromObject(data), after))
	if after.UID != data.UID {
		t.Error("the pool's data Secret was replaced instead of updated in place")
	}
	if n := len(s.nodes()); n != 2 {
		t.Errorf("workload cluster has %d Nodes, want the server and one pool instance", n)
	}
	s.token.check(t)
}

// waitPool waits until the pool runs want instances, all at version: the
// SimMachinePool's instances, the MachinePool's Node references and versions, and
// the workload cluster's Ready Nodes agree.
func (s *scenario) waitPool(pool *stack.AgentPool, want int, version string) {
	s.t.Helper()
	s.eventually(fmt.Sprintf("%d pool instances at %s", want, version), func(ctx context.Context) (bool, string, error) {
		mp := &clusterv1.MachinePool{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pool.MachinePool), mp); err != nil {
			return false, "", err
		}
		sp := &simv1.SimMachinePool{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pool.SimPool), sp); err != nil {
			return false, "", err
		}
		if c := poolCondition(sp); c != nil && (c.Reason == "BootstrapDataInvalid" || c.Reason == "JoinRefused" || c.Reason == "NotAgents") {
			return false, "", fmt.Errorf("SimMachinePool: %s: %s", c.Reason, c.Message)
		}
		nodes, ready := 0, 0
		list := &corev1.NodeList{}
		if err := s.workloadClient().List(ctx, list, client.MatchingLabels{stack.PoolLabel: pool.MachinePool.Name}); err != nil {
			return false, "", err
		}
		for _, n := range list.Items {
			nodes++
			if nodeIsReady(&n) && n.Status.NodeInfo.KubeletVersion == version {
				ready++
			}
		}
		atVersion := 0
		for _, inst := range sp.Status.Instances {
			if inst.K3sVersion == version {
				atVersion++
			}
		}
		versions := mp.Status.Versions
		state := fmt.Sprintf("phase %s, %d nodeRefs, versions %v; %d instances (%d at %s); %d Nodes (%d Ready at %s)",
			mp.Status.Phase, len(mp.Status.NodeRefs), versions, len(sp.Status.Instances), atVersion, version, nodes, ready, version)
		ok := mp.Status.Phase == string(clusterv1.MachinePoolPhaseRunning) && len(mp.Status.NodeRefs) == want &&
			len(versions) == 1 && versions[0].Version == version && int(versions[0].Replicas) == want &&
			len(sp.Status.Instances) == want && atVersion == want && nodes == want && ready == want
		return ok, state, nil
	})
}

func poolCondition(sp *simv1.SimMachinePool) *metav1.Condition {
	for i := range sp.Status.Conditions {
		if sp.Status.Conditions[i].Type == clusterv1.ReadyCondition {
			return &sp.Status.Conditions[i]
		}
	}
	return nil
}

func nodeIsReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// poolDataSecretName is the data Secret the pool's KThreesConfig reports, checked
// against what the MachinePool points its instances at.
func (s *scenario) poolDataSecretName(pool *stack.AgentPool) string {
	s.t.Helper()
	config := &bootstrapv1.KThreesConfig{}
	s.must("reading the pool's KThreesConfig", env.Client.Get(s.ctx, client.ObjectKeyFromObject(pool.Config), config))
	mp := &clusterv1.MachinePool{}
	s.must("reading the MachinePool", env.Client.Get(s.ctx, client.ObjectKeyFromObject(pool.MachinePool), mp))
	if got := ptr.Deref(mp.Spec.Template.Spec.Bootstrap.DataSecretName, ""); got != config.Status.DataSecretName {
		s.t.Errorf("MachinePool boots from %q, its KThreesConfig reports %q", got, config.Status.DataSecretName)
	}
	return config.Status.DataSecretName
}

// poolNodes are the names of the pool's Nodes.
func (s *scenario) poolNodes(pool *stack.AgentPool) sets.Set[string] {
	s.t.Helper()
	list := &corev1.NodeList{}
	s.must("listing the pool's Nodes", s.workloadClient().List(s.ctx, list, client.MatchingLabels{stack.PoolLabel: pool.MachinePool.Name}))
	out := sets.New[string]()
	for _, n := range list.Items {
		out.Insert(n.Name)
	}
	return out
}

// patchPool changes the MachinePool's spec.
func (s *scenario) patchPool(pool *stack.AgentPool, change func(*clusterv1.MachinePool)) {
	s.t.Helper()
	mp := &clusterv1.MachinePool{}
	s.must("reading MachinePool", env.Client.Get(s.ctx, client.ObjectKeyFromObject(pool.MachinePool), mp))
	before := mp.DeepCopy()
	change(mp)
	s.must("patching MachinePool", env.Client.Patch(s.ctx, mp, client.MergeFrom(before)))
}
