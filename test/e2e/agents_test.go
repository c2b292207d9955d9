package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// TestAgentsRolloutAndResize: a MachineDeployment rollout restart replaces every
// agent, then agents and servers are resized together; every new agent joins, and
// the token is never deleted or changed. The control plane joins machines through a
// server's internal address (no load balancer): every joiner is sent to the server
// the control plane published, which the simulator accepts only while that server
// runs, and the choice moves when its server is removed.
func TestAgentsRolloutAndResize(t *testing.T) {
	s := newScenario(t, 1, 3)
	s.objs.ControlPlane.Spec.RegistrationMethod = controlplanev1.RegistrationInternalAddress
	s.create()
	s.waitServers(1, oldVersion)
	s.waitAgents(3)
	first := s.registration()
	before := s.agentNames()

	s.patchWorkers(func(md *clusterv1.MachineDeployment) {
		md.Spec.Rollout.After = metav1.NewTime(time.Now())
	})
	s.eventually("the rollout restart to replace every agent", func(ctx context.Context) (bool, string, error) {
		return s.agentNames().Intersection(before).Len() == 0, fmt.Sprintf("agents %v", sets.List(s.agentNames())), nil
	})
	s.waitAgents(3)

	s.patchWorkers(func(md *clusterv1.MachineDeployment) { md.Spec.Replicas = ptr.To[int32](5) })
	s.patchKCP(func(kcp *controlplanev1.KThreesControlPlane) { kcp.Spec.Replicas = ptr.To[int32](3) })
	s.waitAgents(5)
	s.waitServers(3, oldVersion)

	s.patchWorkers(func(md *clusterv1.MachineDeployment) { md.Spec.Replicas = ptr.To[int32](1) })
	s.patchKCP(func(kcp *controlplanev1.KThreesControlPlane) { kcp.Spec.Replicas = ptr.To[int32](1) })
	s.waitAgents(1)
	s.waitServers(1, oldVersion)

	if n := len(s.nodes()); n != 2 {
		t.Errorf("workload cluster has %d Nodes, want 2", n)
	}
	last := s.registration()
	if !s.serverNames().Has(last.Machine) {
		t.Errorf("registration server %s is not one of the servers %v", last.Machine, sets.List(s.serverNames()))
	}
	if !s.serverNames().Has(first.Machine) && last == first {
		t.Errorf("registration still names the removed server %s", first.Machine)
	}
	s.checkJoinURLs()
	s.token.check(t)
}
