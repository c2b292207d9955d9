package controlplane

import (
	"fmt"

	"sigs.k8s.io/cluster-api/util/collections"

	"github.com/capk3s/capk3s/internal/workload"
)

// replacementPreflight says why the replacement of a remediated server must not be
// created yet, or "" when it may. It stands in for preflight while a remediation is in
// progress: preflight wants every server's node Ready, which would never hold when
// more than one server is unhealthy (5 servers, 2 unhealthy: one is remediated, the
// other blocks its replacement, and the in-progress remediation blocks remediating the
// other). Instead, servers marked unhealthy are tolerated as long as etcd keeps quorum
// with one more member that is assumed unhealthy until it proves otherwise, except
// when at most one member remains, which must be allowed to grow back.
//
// With an external datastore there is no quorum, so only the first two rules hold.
func replacementPreflight(machines collections.Machines, nodes workload.Nodes, externalDatastore bool) string {
	if deleting := machines.Filter(collections.HasDeletionTimestamp); deleting.Len() > 0 {
		return fmt.Sprintf("waiting for Machine %s to be deleted", list(deleting.Names()))
	}
	if nodes == nil {
		return blockedUnreachable
	}
	var settling []string
	healthy := 0
	for _, m := range machines {
		switch {
		case isHealthyServer(m, nodes):
			healthy++
		case !collections.IsUnhealthy(m):
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
