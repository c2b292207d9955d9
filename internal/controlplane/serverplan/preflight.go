package serverplan

import (
	"fmt"

	"sigs.k8s.io/cluster-api/util/collections"

	"github.com/capk3s/capk3s/internal/workload"
)

// BlockedUnreachable is why a step waits while the servers' Nodes cannot be read.
const BlockedUnreachable = "the workload cluster's API cannot be reached, so the servers' Nodes cannot be checked"

// Preflight says why the control plane must not add or remove a server now, or ""
// when it may. One operation at a time: a server being deleted, a server without a
// Ready node, or a cluster not yet initialized all mean the previous operation has
// not settled, and etcd membership must not change under it. Nodes that could not be
// read (nil) block too: no step is taken on missing data.
func Preflight(machines collections.Machines, nodes workload.Nodes, initialized bool) string {
	if !initialized {
		return "waiting for the first server to initialize the cluster"
	}
	if deleting := machines.Filter(collections.HasDeletionTimestamp); deleting.Len() > 0 {
		return fmt.Sprintf("waiting for Machine %s to be deleted", list(deleting.Names()))
	}
	if nodes == nil {
		return BlockedUnreachable
	}
	var notReady []string
	for _, m := range machines {
		if !nodes.Ready(m.Name) {
			notReady = append(notReady, m.Name)
		}
	}
	if len(notReady) > 0 {
		return fmt.Sprintf("waiting for the node of Machine %s to be Ready", list(notReady))
	}
	return ""
}

// ReplacementPreflight says why the replacement of a remediated server must not be
// created yet, or "" when it may. It stands in for Preflight while a remediation is in
// progress: Preflight wants every server's node Ready, which would never hold when
// more than one server is unhealthy (5 servers, 2 unhealthy: one is remediated, the
// other blocks its replacement, and the in-progress remediation blocks remediating the
// other). Instead, servers marked unhealthy are tolerated as long as etcd keeps quorum
// with one more member that is assumed unhealthy until it proves otherwise, except
// when at most one member remains, which must be allowed to grow back.
//
// With an external datastore there is no quorum, so only the first two rules hold.
func ReplacementPreflight(machines collections.Machines, nodes workload.Nodes, externalDatastore bool) string {
	if deleting := machines.Filter(collections.HasDeletionTimestamp); deleting.Len() > 0 {
		return fmt.Sprintf("waiting for Machine %s to be deleted", list(deleting.Names()))
	}
	if nodes == nil {
		return BlockedUnreachable
	}
	var settling []string
	healthy := 0
	for _, m := range machines {
		switch {
		case IsHealthyServer(m, nodes):
			healthy++
		case collections.IsUnhealthy(m), nodes.Ready(m.Name) && Restarting(m) != "":
			// Counted out of the quorum below, not waited for: a restart ends on its own.
		default:
			settling = append(settling, m.Name)
		}
	}
	if len(settling) > 0 {
		return fmt.Sprintf("waiting for the node of Machine %s to be Ready", list(settling))
	}
	members := machines.Len() + 1
	if !externalDatastore && machines.Len() > 1 && healthy < members/2+1 {
		return fmt.Sprintf("adding a server would risk etcd quorum: %d of %d servers are healthy", healthy, machines.Len())
	}
	return ""
}
