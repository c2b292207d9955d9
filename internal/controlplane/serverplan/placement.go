package serverplan

import (
	"context"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/failuredomains"
)

// FailureDomainForScaleUp is where a new server goes, as KCP places it: the listed
// domain with the fewest up-to-date servers that are not being deleted, ties broken by
// the fewest servers overall. Counting only up-to-date servers spreads the servers
// that remain once a rollout is over, not the ones it is about to remove.
func FailureDomainForScaleUp(ctx context.Context, cluster *clusterv1.Cluster, machines, outdated collections.Machines) string {
	upToDate := machines.Filter(collections.Not(collections.HasDeletionTimestamp), func(m *clusterv1.Machine) bool {
		_, isOutdated := outdated[m.Name]
		return !isOutdated
	})
	return failuredomains.PickFewest(ctx, controlPlaneFailureDomains(cluster), machines, upToDate)
}

// SelectMachineForScaleDown chooses the server a scale-down removes, as KCP chooses:
// one marked with CAPI's delete annotation first, then an outdated one; among those,
// one in a failure domain the Cluster no longer lists, else one from the listed
// domain with the most servers, the oldest there. nil when none may go.
// updatingInPlace says whether a server is in an in-place update (the in-place
// code's verdict): such a server is never picked by itself.
func SelectMachineForScaleDown(ctx context.Context, cluster *clusterv1.Cluster, machines, outdated collections.Machines, updatingInPlace collections.Func) *clusterv1.Machine {
	// Only an update CAPI has not started lets scaling run, and that server stays as
	// it is until CAPI updates it or someone deletes it or marks it for deletion.
	eligible := collections.And(collections.Not(collections.HasDeletionTimestamp), collections.Not(updatingInPlace))
	candidates := machines.Filter(eligible)
	if marked := machines.Filter(collections.Not(collections.HasDeletionTimestamp), collections.HasAnnotationKey(clusterv1.DeleteMachineAnnotation)); marked.Len() > 0 {
		candidates = marked
	} else if o := outdated.Filter(eligible); o.Len() > 0 {
		candidates = o
	}
	if candidates.Len() == 0 {
		return nil
	}
	domains := controlPlaneFailureDomains(cluster)
	// A server outside every listed domain (its domain was removed from the Cluster, or
	// it has none while domains exist) goes first: PickMost only counts listed
	// domains, so it would never pick such a server and the step would stall.
	if stray := candidates.Filter(collections.Not(collections.InFailureDomains(failureDomainNames(domains)...))); len(domains) > 0 && stray.Len() > 0 {
		return stray.Oldest()
	}
	fd := failuredomains.PickMost(ctx, domains, machines, candidates)
	return candidates.Filter(collections.InFailureDomains(fd)).Oldest()
}

func failureDomainNames(domains []clusterv1.FailureDomain) []string {
	names := make([]string, 0, len(domains))
	for _, fd := range domains {
		names = append(names, fd.Name)
	}
	return names
}

// controlPlaneFailureDomains are the Cluster's failure domains that may host servers.
func controlPlaneFailureDomains(cluster *clusterv1.Cluster) []clusterv1.FailureDomain {
	var out []clusterv1.FailureDomain
	for _, fd := range cluster.Status.FailureDomains {
		if fd.ControlPlane != nil && *fd.ControlPlane {
			out = append(out, fd)
		}
	}
	return out
}
