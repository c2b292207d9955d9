package controlplane

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/workload"
)

func TestSetNodesMatch(t *testing.T) {
	t.Parallel()
	kcp := &controlplanev1.KThreesControlPlane{}
	setNodesMatch(kcp, workload.Mismatches{Version: []string{"v"}, ProviderID: []string{"p"}})
	c := conditions.Get(kcp, controlplanev1.NodesMatchMachinesCondition)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != controlplanev1.ProviderIDMismatchReason || c.Message != "p; v" {
		t.Fatalf("both kinds: %+v, want False, ProviderIDMismatch, \"p; v\"", c)
	}
	setNodesMatch(kcp, workload.Mismatches{Version: []string{"v"}})
	if c := conditions.Get(kcp, controlplanev1.NodesMatchMachinesCondition); c == nil || c.Reason != controlplanev1.VersionMismatchReason {
		t.Fatalf("version only: %+v, want VersionMismatch", c)
	}
	setNodesMatch(kcp, workload.Mismatches{})
	if c := conditions.Get(kcp, controlplanev1.NodesMatchMachinesCondition); c != nil {
		t.Errorf("no mismatch: %+v, want the condition removed", c)
	}
}
