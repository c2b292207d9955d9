package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/serverplan"

	"github.com/capk3s/capk3s/test/cpfixtures"
)

// A scale-down that finds no server to remove says so, for the ScalingDown condition,
// instead of stalling silently.
func TestScaleDownWithoutAVictimSaysWhy(t *testing.T) {
	machines := collections.FromMachines(cpfixtures.DecisionMachine("a", time.Hour, cpfixtures.BeingDeleted()))
	r := &Reconciler{}
	ctx := context.Background()
	kcp := cpfixtures.DecisionKCP(1, nil)
	why, err := r.removeServer(ctx, kcp, serverplan.SelectMachineForScaleDown(ctx, &clusterv1.Cluster{}, machines, nil, updatingInPlace), machines)
	if err != nil || !strings.Contains(why, "no server to remove") {
		t.Errorf("removeServer = %q, %v; want a reason", why, err)
	}
	setScaling(kcp, observed{machines: collections.FromMachines(cpfixtures.DecisionMachine("a", time.Hour), cpfixtures.DecisionMachine("b", time.Hour)), blocked: why})
	if c := conditions.Get(kcp, controlplanev1.ScalingDownCondition); c == nil || !strings.Contains(c.Message, why) {
		t.Errorf("ScalingDown = %+v, want the reason in its message", c)
	}
}
