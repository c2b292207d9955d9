package main

import (
	"testing"

	kubeadmcontrolplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// The harness runs no webhooks: the objects carry the defaults the controllers need.
// CAPI's MachineDeployment controller refuses a MachineDeployment without a strategy
// type, so no agent was made before.
func TestEveryClusterIsMadeWithTheRolloutDefaultsTheWebhooksWouldStore(t *testing.T) {
	for _, p := range []provider{providerCapk3s, providerKCP} {
		t.Run(string(p), func(t *testing.T) {
			objs := clusterObjects(p, "bench", "c0000", shape{Servers: 3, Agents: 2})
			var md *clusterv1.MachineDeployment
			for _, o := range objs {
				switch o := o.(type) {
				case *clusterv1.MachineDeployment:
					md = o
				case *kubeadmcontrolplanev1.KubeadmControlPlane:
					rs := o.Spec.Rollout.Strategy
					if rs.Type != kubeadmcontrolplanev1.RollingUpdateStrategyType || rs.RollingUpdate.MaxSurge == nil || rs.RollingUpdate.MaxSurge.IntValue() != 1 {
						t.Errorf("KubeadmControlPlane rollout strategy: %+v", rs)
					}
				case *controlplanev1.KThreesControlPlane:
					rs := o.Spec.RolloutStrategy
					if rs == nil || rs.Type != controlplanev1.RollingUpdateStrategyType || rs.RollingUpdate == nil ||
						rs.RollingUpdate.MaxSurge == nil || rs.RollingUpdate.MaxSurge.IntValue() != 1 {
						t.Errorf("KThreesControlPlane rollout strategy: %+v", rs)
					}
					// The in-memory servers take no etcd snapshot: a rollout waiting for
					// one would never end.
					if rs != nil && rs.EtcdSnapshot != controlplanev1.EtcdSnapshotBeforeRolloutDisabled {
						t.Errorf("KThreesControlPlane snapshot before a rollout: %q, want Disabled", rs.EtcdSnapshot)
					}
				}
			}
			if md == nil {
				t.Fatalf("no MachineDeployment among %d objects", len(objs))
			}
			if *md.Spec.Replicas != 2 {
				t.Errorf("agents: %d, want 2", *md.Spec.Replicas)
			}
			rs := md.Spec.Rollout.Strategy
			if rs.Type != clusterv1.RollingUpdateMachineDeploymentStrategyType {
				t.Errorf("MachineDeployment strategy type %q, want %q", rs.Type, clusterv1.RollingUpdateMachineDeploymentStrategyType)
			}
			if rs.RollingUpdate.MaxSurge == nil || rs.RollingUpdate.MaxSurge.IntValue() != 1 ||
				rs.RollingUpdate.MaxUnavailable == nil || rs.RollingUpdate.MaxUnavailable.IntValue() != 0 {
				t.Errorf("MachineDeployment rolling update: %+v", rs.RollingUpdate)
			}
		})
	}
}

func TestWithoutAgentsNoMachineDeploymentIsMade(t *testing.T) {
	for _, o := range clusterObjects(providerCapk3s, "bench", "c0000", shape{Servers: 1}) {
		if _, ok := o.(*clusterv1.MachineDeployment); ok {
			t.Errorf("a MachineDeployment was made for a shape without agents")
		}
	}
}
