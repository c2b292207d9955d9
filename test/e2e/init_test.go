package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/test/stack"
)

// TestInitNonHA: one server and two agents come up; the kubeconfig capk3s wrote
// reaches the workload cluster, whose Nodes carry k3s's labels. The agents' Nodes
// registered with Cluster API's uninitialized taint, which CAPI removed. Without the
// in-place path, the server whose certificates near expiry is then replaced
// (rollout.before.certificatesExpiryDays, certificates_test.go).
func TestInitNonHA(t *testing.T) {
	s := newScenario(t, 1, 2)
	s.withShortCertificateChecks()
	// CAs that expire within k3s's 120-day leaf window: k3s lists them under every
	// leaf file they sign (certificates_test.go, checkCAExpiryIsNoLeaf).
	s.objs.ControlPlane.Spec.CACertificateValidityPeriodDays = shortCADays
	s.create()
	s.waitServers(1, oldVersion)
	s.waitAgents(2)
	s.clusterAvailable()
	s.checkUninitializedTaintRemoved()

	nodes := s.nodes()
	if len(nodes) != 3 {
		t.Fatalf("workload cluster has %d Nodes, want 3", len(nodes))
	}
	servers, agents := 0, 0
	for name, n := range nodes {
		switch n.Labels["capk3s.io/role"] {
		case "server":
			servers++
			for _, l := range []string{"node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/etcd"} {
				if n.Labels[l] != "true" {
					t.Errorf("server Node %s lacks %s=true", name, l)
				}
			}
			// No supported k3s minor sets the master role label any more.
			if _, ok := n.Labels["node-role.kubernetes.io/master"]; ok {
				t.Errorf("server Node %s has node-role.kubernetes.io/master, which k3s v1.34 and later do not set", name)
			}
			if n.Annotations["etcd.k3s.cattle.io/node-name"] == "" {
				t.Errorf("server Node %s has no etcd member annotation", name)
			}
		case "agent":
			agents++
			if _, ok := n.Labels["node-role.kubernetes.io/control-plane"]; ok {
				t.Errorf("agent Node %s is labelled control-plane", name)
			}

		default:
			t.Errorf("Node %s has no capk3s.io/role label from its KThreesConfig: %v", name, n.Labels)
		}
		if n.Status.NodeInfo.KubeletVersion != oldVersion {
			t.Errorf("Node %s runs %q, want %s", name, n.Status.NodeInfo.KubeletVersion, oldVersion)
		}
	}
	if servers != 1 || agents != 2 {
		t.Errorf("%d server and %d agent Nodes, want 1 and 2", servers, agents)
	}
	tok := s.tokenSecret()
	if len(tok.Data["agent-value"]) == 0 {
		t.Error("a new cluster's token Secret has no agent token")
	}
	s.checkCAExpiryIsNoLeaf()
	s.checkCertificateRenewalByReplacement()
	s.token.check(t)
}

// TestInitHA: three servers form one etcd cluster of three members. They are named
// by the control plane's machineNaming template, and CAPI's Machine controller puts
// the machine template's taint on their Nodes. They take etcd snapshots to S3, which
// the control plane reports, and the first one starts from a restore that the joining
// ones must not repeat.
func TestInitHA(t *testing.T) {
	s := newScenario(t, 3, 0)
	s.objs.ControlPlane.Spec.MachineNaming.Template = "{{ .cluster.name }}-server-{{ .random }}"
	taint := clusterv1.MachineTaint{Key: "example.com/servers-only", Value: "true", Effect: corev1.TaintEffectNoSchedule,
		Propagation: clusterv1.MachineTaintPropagationAlways}
	s.objs.ControlPlane.Spec.MachineTemplate.Spec.Taints = []clusterv1.MachineTaint{taint}
	s.withEtcdSnapshots()
	s.create()
	s.waitServers(3, oldVersion)
	s.clusterAvailable()
	s.waitEtcdSnapshots()
	s.checkRestoreOnTheFirstServerOnly()

	named := regexp.MustCompile(`^k3s-server-[a-z0-9]{5}$`)
	for name := range s.serverNames() {
		if !named.MatchString(name) {
			t.Errorf("server Machine %q does not follow the template %q", name, s.objs.ControlPlane.Spec.MachineNaming.Template)
		}
	}
	s.eventually("the servers' Nodes to carry the machine template's taint", func(ctx context.Context) (bool, string, error) {
		machines, err := s.serverMachines(ctx)
		if err != nil {
			return false, "", err
		}
		nodes := s.nodes()
		for _, m := range machines {
			n := nodes[m.Status.NodeRef.Name]
			if !slices.ContainsFunc(n.Spec.Taints, func(got corev1.Taint) bool {
				return got.Key == taint.Key && got.Value == taint.Value && got.Effect == taint.Effect
			}) {
				return false, fmt.Sprintf("Node %q of %s has taints %v", m.Status.NodeRef.Name, m.Name, n.Spec.Taints), nil
			}
		}
		return true, "", nil
	})

	members := sets.New(simulator.EtcdMembers(s.key)...)
	for name, n := range s.nodes() {
		if m := n.Annotations["etcd.k3s.cattle.io/node-name"]; !members.Has(m) {
			t.Errorf("Node %s names etcd member %q, not one of %v", name, m, sets.List(members))
		}
	}
	s.token.check(t)
}

// checkUninitializedTaintRemoved: every agent's Node was created with Cluster API's
// uninitialized taint (the simulator's kubelet registered it from node-taint), and
// CAPI's Machine controller removes it once it has matched the Node to its Machine.
func (s *scenario) checkUninitializedTaintRemoved() {
	s.t.Helper()
	isUninitialized := func(tn corev1.Taint) bool {
		return tn.Key == clusterv1.NodeUninitializedTaint.Key && tn.Effect == clusterv1.NodeUninitializedTaint.Effect
	}
	s.eventually("Cluster API to remove the uninitialized taint from the agents' Nodes", func(ctx context.Context) (bool, string, error) {
		machines, err := s.machines(ctx, client.MatchingLabels{stack.PoolLabel: "agents"})
		if err != nil {
			return false, "", err
		}
		nodes := s.nodes()
		for _, m := range machines {
			name := m.Status.NodeRef.Name
			if registered := simulator.RegisteredTaints(s.key, name); !slices.ContainsFunc(registered, isUninitialized) {
				return false, "", fmt.Errorf("agent Node %q registered with taints %v, without %s", name, registered, clusterv1.NodeUninitializedTaint.ToString())
			}
			if n := nodes[name]; slices.ContainsFunc(n.Spec.Taints, isUninitialized) {
				return false, fmt.Sprintf("Node %q of %s has taints %v", name, m.Name, n.Spec.Taints), nil
			}
		}
		return len(machines) > 0, fmt.Sprintf("%d agent Machines", len(machines)), nil
	})
}
