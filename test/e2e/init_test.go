package e2e

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
)

// TestInitNonHA: one server and two agents come up; the kubeconfig capk3s wrote
// reaches the workload cluster, whose Nodes carry k3s's labels.
func TestInitNonHA(t *testing.T) {
	s := newScenario(t, 1, 2)
	s.create()
	s.waitServers(1, oldVersion)
	s.waitAgents(2)
	s.clusterAvailable()

	nodes := s.nodes()
	if len(nodes) != 3 {
		t.Fatalf("workload cluster has %d Nodes, want 3", len(nodes))
	}
	servers, agents := 0, 0
	for name, n := range nodes {
		switch n.Labels["capk3s.io/role"] {
		case "server":
			servers++
			for _, l := range []string{"node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/etcd", "node-role.kubernetes.io/master"} {
				if n.Labels[l] != "true" {
					t.Errorf("server Node %s lacks %s=true", name, l)
				}
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
	s.token.check(t)
}

// TestInitHA: three servers form one etcd cluster of three members. They take etcd
// snapshots to S3, which the control plane reports, and the first one starts from a
// restore that the joining ones must not repeat.
func TestInitHA(t *testing.T) {
	s := newScenario(t, 3, 0)
	s.withEtcdSnapshots()
	s.create()
	s.waitServers(3, oldVersion)
	s.clusterAvailable()
	s.waitEtcdSnapshots()
	s.checkRestoreOnTheFirstServerOnly()

	members := sets.New(simulator.EtcdMembers(s.key)...)
	for name, n := range s.nodes() {
		if m := n.Annotations["etcd.k3s.cattle.io/node-name"]; !members.Has(m) {
			t.Errorf("Node %s names etcd member %q, not one of %v", name, m, sets.List(members))
		}
	}
	s.token.check(t)
}
