package main

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// A cluster whose Machines are all Ready is not ready until its Cluster's status
// counts them too: the control plane's and CAPI's Cluster status writes that follow the
// Machines belong to provisioning, not to the idle window.
func TestAClusterIsReadyOnceItsStatusCountsItsMachines(t *testing.T) {
	available := func(cp, workers *int32) *clusterv1.Cluster {
		c := &clusterv1.Cluster{}
		c.Status.Conditions = []metav1.Condition{{Type: clusterv1.AvailableCondition, Status: metav1.ConditionTrue}}
		c.Status.ControlPlane = &clusterv1.ClusterControlPlaneStatus{ReadyReplicas: cp, AvailableReplicas: cp}
		c.Status.Workers = &clusterv1.WorkersStatus{ReadyReplicas: workers, AvailableReplicas: workers}
		return c
	}
	for _, tc := range []struct {
		name                      string
		cluster                   *clusterv1.Cluster
		servers, agents           int
		readyServers, readyAgents int
		want                      bool
	}{
		{"all counted", available(ptr.To[int32](3), ptr.To[int32](2)), 3, 2, 3, 2, true},
		{"single server, no agents", available(ptr.To[int32](1), nil), 1, 0, 1, 0, true},
		{"control plane status behind its Machines", available(ptr.To[int32](2), ptr.To[int32](2)), 3, 2, 3, 2, false},
		{"control plane status not written yet", available(nil, nil), 1, 0, 1, 0, false},
		{"workers status behind the agents", available(ptr.To[int32](3), ptr.To[int32](1)), 3, 2, 3, 2, false},
		{"a Machine not Ready", available(ptr.To[int32](3), ptr.To[int32](2)), 3, 2, 2, 2, false},
		{"Cluster not Available", &clusterv1.Cluster{}, 1, 0, 1, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := clusterReady(tc.cluster, tc.readyServers, tc.readyAgents, tc.servers, tc.agents); got != tc.want {
				t.Errorf("clusterReady = %v, want %v", got, tc.want)
			}
		})
	}
}
