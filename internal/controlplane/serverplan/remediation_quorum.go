package serverplan

import (
	"sort"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"

	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/workload"
)

// QuorumAfterRemoval checks etcd quorum once victim's member is gone: of the n-1
// remaining servers, those with a Ready node that no health check marked unhealthy
// must be at least a majority, floor((n-1)/2)+1. So 3 servers tolerate remediating
// one (2 of 2 healthy, quorum 2) but not two unhealthy ones (1 of 2), 5 servers
// tolerate two unhealthy ones, and a single server is never removed (0 of 0, quorum 1).
// A server's Ready node stands for its etcd member: k3s runs etcd in the server
// process, whose node does not stay Ready without it.
func QuorumAfterRemoval(machines collections.Machines, nodes workload.Nodes, victim *clusterv1.Machine) (members, healthy, quorum int, ok bool) {
	for _, m := range machines {
		if m.Name == victim.Name {
			continue
		}
		members++
		if IsHealthyServer(m, nodes) {
			healthy++
		}
	}
	quorum = members/2 + 1
	return members, healthy, quorum, healthy >= quorum
}

// IsHealthyServer says a server counts toward etcd quorum: not going away, not
// marked unhealthy, its Node Ready, its k3s not being restarted (Restarting), and its
// etcd member not removed. A server whose member k3s has removed stays Ready (k3s
// keeps running) but votes in no quorum, whichever way k3s's member controller
// recorded the removal (k3s.EtcdMemberRemoved).
func IsHealthyServer(m *clusterv1.Machine, nodes workload.Nodes) bool {
	if !m.DeletionTimestamp.IsZero() || collections.IsUnhealthy(m) || !nodes.Ready(m.Name) || Restarting(m) != "" {
		return false
	}
	return !k3s.EtcdMemberRemoved(nodes[m.Name].Annotations)
}

// pickVictim chooses among unhealthy servers the one whose loss costs least: one
// without a Ready node (it serves nothing now) before one with, then the oldest, then
// by name so that every pass picks the same one.
func pickVictim(unhealthy collections.Machines, nodes workload.Nodes) *clusterv1.Machine {
	ms := unhealthy.UnsortedList()
	sort.Slice(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		if ra, rb := nodes.Ready(a.Name), nodes.Ready(b.Name); ra != rb {
			return !ra
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	return ms[0]
}
