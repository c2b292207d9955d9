package lifecycle

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/token"
	"github.com/capk3s/capk3s/test/envtest"
)

// A version bump replaces every server, one at a time: at no moment are fewer than
// two servers healthy, and the join token stays what it was.
func TestRollingUpgradeReplacesEveryServer(t *testing.T) {
	s := newScenario(t)
	// This workload is a bare kube-apiserver: no k3s supervisor takes the etcd
	// snapshot a rollout waits for by default. That wait is tested in
	// internal/controlplane, and end to end against the simulator's k3s.
	s.createControlPlane(3, func(kcp *controlplanev1.KThreesControlPlane) {
		kcp.Spec.RolloutStrategy = &controlplanev1.RolloutStrategy{EtcdSnapshot: controlplanev1.EtcdSnapshotBeforeRolloutDisabled}
	})
	s.waitForReplicas(3)
	ctx := context.Background()
	tokBefore, found, err := token.Lookup(ctx, env.Client, s.cluster)
	if err != nil || !found {
		t.Fatalf("token before the upgrade: found %v, err %v", found, err)
	}
	original := map[string]bool{}
	for _, m := range s.machines() {
		original[m.Name] = true
	}

	kcp := s.getKCP()
	patchFrom := client.MergeFrom(kcp.DeepCopy())
	kcp.Spec.Version = "v1.36.0+k3s1"
	s.must("bumping the version", env.Client.Patch(ctx, kcp, patchFrom))

	sawRollingOut := false
	err = envtest.Eventually(ctx, 4*time.Minute, func(context.Context) (bool, error) {
		if healthy := s.readyNodes(); healthy < 2 {
			return false, fmt.Errorf("only %d healthy servers during the rollout", healthy)
		}
		kcp := s.getKCP()
		sawRollingOut = sawRollingOut || conditions.IsTrue(kcp, controlplanev1.RollingOutCondition)
		machines := s.machines()
		if len(machines) != 3 {
			return false, nil
		}
		for _, m := range machines {
			if original[m.Name] || m.Spec.Version != "v1.36.0+k3s1" || !m.DeletionTimestamp.IsZero() {
				return false, nil
			}
		}
		return ptr.Deref(kcp.Status.UpToDateReplicas, 0) == 3 && ptr.Deref(kcp.Status.ReadyReplicas, 0) == 3 &&
			kcp.Status.Version == "v1.36.0+k3s1", nil
	})
	if err != nil {
		t.Fatalf("rolling upgrade: %v; status %+v", err, s.getKCP().Status)
	}
	if !sawRollingOut {
		t.Error("RollingOut was never reported True during the rollout")
	}
	if conditions.IsTrue(s.getKCP(), controlplanev1.RollingOutCondition) {
		t.Error("RollingOut is still True after the rollout")
	}
	tokAfter, _, err := token.Lookup(ctx, env.Client, s.cluster)
	if err != nil || tokAfter != tokBefore {
		t.Errorf("the join token changed during the rollout (err %v)", err)
	}
}
