package realk3s

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// scenario is one cluster on real k3s and the clients that reach it.
type scenario struct {
	t   *testing.T
	ctx context.Context
	ns  string
	key client.ObjectKey
	c   *realCluster
	wc  client.Client
	cs  kubernetes.Interface
}

func (s *scenario) must(what string, err error) {
	s.t.Helper()
	if err != nil {
		dumpMachines(s.t)
		s.t.Fatalf("%s: %v", what, err)
	}
}

// machines lists the cluster's Machines, servers or agents.
func (s *scenario) machines(servers bool) []clusterv1.Machine {
	s.t.Helper()
	list := &clusterv1.MachineList{}
	s.must("listing Machines", env.Client.List(s.ctx, list, client.InNamespace(s.ns), client.MatchingLabels{clusterv1.ClusterNameLabel: s.key.Name}))
	var out []clusterv1.Machine
	for _, m := range list.Items {
		_, server := m.Labels[clusterv1.MachineControlPlaneLabel]
		if server == servers {
			out = append(out, m)
		}
	}
	return out
}

// machineUIDs are the UIDs of the cluster's server or agent Machines.
func (s *scenario) machineUIDs(servers bool) sets.Set[string] {
	out := sets.New[string]()
	for _, m := range s.machines(servers) {
		out.Insert(string(m.UID))
	}
	return out
}
