package serverplan

import (
	"time"

	"sigs.k8s.io/cluster-api/util/collections"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// Step is the one operation a pass may take on the servers.
type Step int

const (
	// StepNone leaves the servers as they are.
	StepNone Step = iota
	// StepScaleUp adds a server.
	StepScaleUp
	// StepScaleDown removes a server (SelectMachineForScaleDown says which).
	StepScaleDown
)

// NextStep decides the pass's operation from what it observed, and why it waits when
// one is needed but not allowed yet. A rollout is scaling with a preference: with
// maxSurge 1 a new server comes first and an outdated one goes next; with maxSurge 0
// an outdated one goes first. outdated are the servers (not being deleted) that need
// replacing.
func NextStep(kcp *controlplanev1.KThreesControlPlane, seen Observed, outdated collections.Machines, tokenAvailable bool) (Step, string) {
	want, have := DesiredReplicas(kcp), int32(seen.Machines.Len())
	rollout := want == have && outdated.Len() > 0
	if want == have && !rollout {
		return StepNone, ""
	}
	if rollout && len(seen.UpdatingInPlace) > 0 {
		// Only an update CAPI has not started gets this far (the controller holds
		// every other): one update at a time, and that server is never replaced for it.
		return StepNone, "the rollout waits for the in-place update of " + list(seen.UpdatingInPlace)
	}
	grow := want > have || (rollout && MaxSurge(kcp) > 0)
	if grow && !tokenAvailable {
		return StepNone, "the join token is not available (see TokenAvailable)"
	}
	if have == 0 {
		// The first server initializes the cluster; nothing to check before it.
		return StepScaleUp, ""
	}
	if seen.CriticalChange != "" {
		// k3s would refuse every new server; removing one would only shrink the
		// cluster.
		return StepNone, seen.CriticalChange
	}
	if rollout && !grow && !ExternalDatastore(kcp) && want < 3 {
		return StepNone, "maxSurge 0 removes a server before creating its replacement; with fewer than 3 servers that loses etcd quorum"
	}
	if rollout && !grow && want < 2 {
		return StepNone, "maxSurge 0 removes a server before creating its replacement; with a single server that leaves the cluster without an API server"
	}
	blocked := Preflight(seen.Machines, seen.Nodes, initialized(kcp))
	if _, _, remediating := RemediationFor(kcp); remediating && grow {
		// A replacement tolerates other servers marked unhealthy (they wait for it);
		// the plain preflight would block it behind them forever.
		blocked = ReplacementPreflight(seen.Machines, seen.Nodes, ExternalDatastore(kcp))
	}
	if blocked != "" {
		return StepNone, blocked
	}
	if grow {
		return StepScaleUp, ""
	}
	return StepScaleDown, ""
}

// MaxSurge is spec.rolloutStrategy.rollingUpdate.maxSurge: 1 unless set to 0.
func MaxSurge(kcp *controlplanev1.KThreesControlPlane) int {
	rs := kcp.Spec.RolloutStrategy
	if rs == nil || rs.RollingUpdate == nil || rs.RollingUpdate.MaxSurge == nil {
		return 1
	}
	return rs.RollingUpdate.MaxSurge.IntValue()
}

// RolloutDeadlines are the times after which servers created earlier are replaced:
// spec.rolloutAfter (cluster-api-k3s's field) and spec.rollout.after (the contract's,
// which a ClusterClass topology sets). Either may be set, or both; each applies.
func RolloutDeadlines(kcp *controlplanev1.KThreesControlPlane) []time.Time {
	var out []time.Time
	if ra := kcp.Spec.RolloutAfter; ra != nil {
		out = append(out, ra.Time)
	}
	if after := kcp.Spec.Rollout.After; !after.IsZero() {
		out = append(out, after.Time)
	}
	return out
}

// UntilRolloutAfter is how long until the next rollout deadline makes servers
// outdated: a real time-based event, so the one place the controller requeues after
// a delay. 0 when no deadline is ahead.
func UntilRolloutAfter(kcp *controlplanev1.KThreesControlPlane, now time.Time) time.Duration {
	var soonest time.Duration
	for _, ra := range RolloutDeadlines(kcp) {
		if d := ra.Sub(now); d > 0 && (soonest == 0 || d < soonest) {
			soonest = d
		}
	}
	return soonest
}
