package e2e

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// TestHARollingUpgrade: a version bump replaces every server, one at a time, without
// losing etcd quorum (the simulator fails the wait at once if it does) and without
// touching the token.
func TestHARollingUpgrade(t *testing.T) {
	s := newScenario(t, 3, 0)
	s.create()
	s.waitServers(3, oldVersion)
	before := s.serverNames()
	value := string(s.tokenSecret().Data["value"])

	s.patchKCP(func(kcp *controlplanev1.KThreesControlPlane) { kcp.Spec.Version = newVersion })
	s.waitServers(3, newVersion)

	if kept := s.serverNames().Intersection(before); kept.Len() > 0 {
		t.Errorf("servers not replaced by the upgrade: %v", sets.List(kept))
	}
	nodes := s.nodes()
	if len(nodes) != 3 {
		t.Errorf("workload cluster has %d Nodes after the upgrade, want 3", len(nodes))
	}
	for name, n := range nodes {
		if n.Status.NodeInfo.KubeletVersion != newVersion {
			t.Errorf("Node %s runs %s after the upgrade", name, n.Status.NodeInfo.KubeletVersion)
		}
	}
	if simulator.QuorumLost(s.key) {
		t.Error("etcd lost quorum during the upgrade")
	}
	if got := string(s.tokenSecret().Data["value"]); got != value {
		t.Error("the token's value changed during the upgrade")
	}
	s.token.check(t)
}
