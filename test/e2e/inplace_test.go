package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/inplace"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
)

// inPlaceNamespaceLabel selects the namespaces whose clusters the in-place
// extension serves, so that the other scenarios on the shared stack keep rolling out.
const inPlaceNamespaceLabel = "e2e.capk3s.io/in-place"

// registerInPlaceExtension labels the scenario's namespace and registers the stack's
// in-place update extension for it, as a user applies the ExtensionConfig of the
// release; it waits until CAPI has discovered the extension's handlers.
func registerInPlaceExtension(s *scenario) {
	s.t.Helper()
	ns := &corev1.Namespace{}
	s.must("reading the namespace", env.Client.Get(s.ctx, client.ObjectKey{Name: s.ns}, ns))
	before := ns.DeepCopy()
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[inPlaceNamespaceLabel] = "true"
	s.must("labelling the namespace", env.Client.Patch(s.ctx, ns, client.MergeFrom(before)))

	_, caBundle, _ := env.ServingCert()
	ext := &runtimev1.ExtensionConfig{
		ObjectMeta: metav1.ObjectMeta{Name: inplace.ExtensionConfigName},
		Spec: runtimev1.ExtensionConfigSpec{
			ClientConfig: runtimev1.ClientConfig{
				URL:      "https://" + net.JoinHostPort(inPlaceExtension.Host, strconv.Itoa(inPlaceExtension.Port)),
				CABundle: caBundle,
			},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{inPlaceNamespaceLabel: "true"}},
		},
	}
	s.must("registering the in-place extension", env.Client.Create(s.ctx, ext))
	s.t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ext) })
	s.eventually("the in-place extension to be discovered", func(ctx context.Context) (bool, string, error) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ext), ext); err != nil {
			return false, "", err
		}
		return conditions.IsTrue(ext, runtimev1.ExtensionConfigDiscoveredCondition) && len(ext.Status.Handlers) == 3,
			fmt.Sprintf("handlers %v, conditions %v", ext.Status.Handlers, ext.Status.Conditions), nil
	})
}

// machineUIDs maps the cluster's Machines to their UIDs: a Machine replaced under the
// same name would still show.
func (s *scenario) machineUIDs() map[string]types.UID {
	s.t.Helper()
	list := &clusterv1.MachineList{}
	s.must("listing Machines", env.Client.List(s.ctx, list, client.InNamespace(s.ns), client.MatchingLabels{clusterv1.ClusterNameLabel: s.key.Name}))
	out := map[string]types.UID{}
	for _, m := range list.Items {
		out[m.Name] = m.UID
	}
	return out
}

// checkUpgradedInPlace fails unless the cluster has exactly the Machines it had, each
// up to date, and the same Nodes, all running version.
func (s *scenario) checkUpgradedInPlace(machines map[string]types.UID, nodes sets.Set[string], version string) {
	s.t.Helper()
	if got := s.machineUIDs(); !equalUIDs(got, machines) {
		s.t.Errorf("Machines changed: before %v, after %v", machines, got)
	}
	list := &clusterv1.MachineList{}
	s.must("listing Machines", env.Client.List(s.ctx, list, client.InNamespace(s.ns), client.MatchingLabels{clusterv1.ClusterNameLabel: s.key.Name}))
	for i := range list.Items {
		m := &list.Items[i]
		if !conditions.IsTrue(m, clusterv1.MachineUpToDateCondition) {
			s.t.Errorf("Machine %s is not up to date: %+v", m.Name, conditions.Get(m, clusterv1.MachineUpToDateCondition))
		}
		if _, updating := m.Annotations[clusterv1.UpdateInProgressAnnotation]; updating {
			s.t.Errorf("Machine %s still carries %s", m.Name, clusterv1.UpdateInProgressAnnotation)
		}
	}
	got := s.nodes()
	if names := sets.KeySet(got); !names.Equal(nodes) {
		s.t.Errorf("Nodes changed: before %v, after %v", sets.List(nodes), sets.List(names))
	}
	for name, n := range got {
		if n.Status.NodeInfo.KubeletVersion != version || n.Spec.Unschedulable {
			s.t.Errorf("Node %s runs %s (unschedulable %v), want %s and schedulable", name, n.Status.NodeInfo.KubeletVersion, n.Spec.Unschedulable, version)
		}
	}
}

func equalUIDs(a, b map[string]types.UID) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestInPlaceUpgrade: on a workload cluster with the system-upgrade-controller and
// the in-place extension registered, a k3s minor upgrade of 3 servers and then of 2
// agents replaces no Machine: the same Nodes and etcd members run the new version,
// quorum holds and the token is untouched. A change the extension refuses (an agent
// label, which k3s only reads at first boot) then rolls the agents out.
//
// Disaster recovery runs on the same cluster (disasterrecovery_test.go): an on-demand
// etcd snapshot to S3 between two markers, the upgrade's own snapshot before any
// server changes, and after the upgrade a restore of the running cluster to the
// first snapshot, which the agents' rollout then follows.
func TestInPlaceUpgrade(t *testing.T) {
	s := newScenario(t, 3, 2)
	s.objs.SimCluster.Annotations = map[string]string{simv1.SystemUpgradeControllerAnnotation: "true"}
	s.withShortCertificateChecks()
	// No surge: with one, CAPI and capk3s create a spare Machine first and update only
	// the others in place; without, every Machine is updated where it is.
	s.objs.ControlPlane.Spec.RolloutStrategy = &controlplanev1.RolloutStrategy{
		Type: controlplanev1.RollingUpdateStrategyType, RollingUpdate: &controlplanev1.RollingUpdate{MaxSurge: ptr.To(intstr.FromInt32(0))},
	}
	s.objs.Workers.Spec.Rollout.Strategy = clusterv1.MachineDeploymentRolloutStrategy{
		Type: clusterv1.RollingUpdateMachineDeploymentStrategyType,
		RollingUpdate: clusterv1.MachineDeploymentRolloutStrategyRollingUpdate{
			MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		},
	}
	s.withEtcdSnapshotsToS3()
	registerInPlaceExtension(s)
	s.create()
	s.waitServers(3, oldVersion)
	s.waitAgents(2)
	s.checkCertificateRenewalInPlace()
	machines := s.machineUIDs()
	nodes := sets.KeySet(s.nodes())
	members := simulator.EtcdMembers(s.key)
	value := string(s.tokenSecret().Data["value"])
	snapshot := s.snapshotOnDemand()

	// Servers first, then agents: k3s agents must not run ahead of their servers. The
	// rollout takes its own etcd snapshot before it changes a server.
	s.upgradeServersAfterSnapshot(newVersion)
	s.waitServers(3, newVersion)
	s.patchWorkers(func(md *clusterv1.MachineDeployment) { md.Spec.Template.Spec.Version = newVersion })
	s.waitAgents(2)
	s.eventually("every Node on the new version", func(context.Context) (bool, string, error) {
		for name, n := range s.nodes() {
			if n.Status.NodeInfo.KubeletVersion != newVersion {
				return false, name + " runs " + n.Status.NodeInfo.KubeletVersion, nil
			}
		}
		return true, "", nil
	})
	s.checkUpgradedInPlace(machines, nodes, newVersion)
	if got := simulator.EtcdMembers(s.key); !sets.New(got...).Equal(sets.New(members...)) {
		t.Errorf("etcd members changed: before %v, after %v", members, got)
	}
	if simulator.QuorumLost(s.key) {
		t.Error("etcd lost quorum during the in-place upgrade")
	}
	if got := string(s.tokenSecret().Data["value"]); got != value {
		t.Error("the token's value changed during the in-place upgrade")
	}

	// The running cluster restored to the snapshot taken before the upgrade.
	s.restoreToSnapshot(snapshot)

	// Refused in place: the agents are replaced.
	agents := s.agentNames()
	template := s.objs.AgentConfigTemplate.DeepCopy()
	s.must("reading the agents' config template", env.Client.Get(s.ctx, client.ObjectKeyFromObject(template), template))
	labelled := template.DeepCopy()
	labelled.ObjectMeta = metav1.ObjectMeta{Namespace: s.ns, Name: template.Name + "-labelled", Labels: template.Labels}
	labelled.Spec.Template.Spec.AgentConfig.NodeLabels = append(labelled.Spec.Template.Spec.AgentConfig.NodeLabels, "tier=edge")
	s.must("creating the new agents' config template", env.Client.Create(s.ctx, labelled))
	s.patchWorkers(func(md *clusterv1.MachineDeployment) { md.Spec.Template.Spec.Bootstrap.ConfigRef.Name = labelled.Name })
	s.eventually("the refused change to replace every agent", func(context.Context) (bool, string, error) {
		return s.agentNames().Intersection(agents).Len() == 0, fmt.Sprintf("agents %v", sets.List(s.agentNames())), nil
	})
	s.waitAgents(2)
	s.token.check(t)
}
