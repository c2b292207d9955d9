package serverplan

import (
	"slices"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// The helpers of the scaling and rollout tests that need serverplan itself; the
// control planes and servers they judge come from test/cpfixtures.

// outdated are the servers (not being deleted) that UpToDateReason would replace, as
// the controller counts them for a pass without in-place updates or renewals.
func outdated(kcp *controlplanev1.KThreesControlPlane, machines collections.Machines, now time.Time) collections.Machines {
	return machines.Filter(collections.Not(collections.HasDeletionTimestamp), func(m *clusterv1.Machine) bool {
		return UpToDateReason(m, ServerObjects{}, false, kcp, now) != ""
	})
}

// notUpdatingInPlace is the in-place verdict of servers no update touches.
func notUpdatingInPlace(*clusterv1.Machine) bool { return false }

// named are those of machines whose names are listed.
func named(machines collections.Machines, names []string) collections.Machines {
	return machines.Filter(func(m *clusterv1.Machine) bool { return slices.Contains(names, m.Name) })
}
