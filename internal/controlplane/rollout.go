package controlplane

import (
	"context"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	ctrl "sigs.k8s.io/controller-runtime"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// reconcileReplicas takes one step toward spec.replicas servers that are all up to
// date. A rollout is scaling with a preference: with maxSurge 1 a new server comes
// first and an outdated one goes next; with maxSurge 0 an outdated one goes first. The
// scale-down choice always prefers outdated servers, so either way each outdated
// server is replaced one at a time, behind the same preflight checks as scaling.
// With in-place updates, the outdated server a scale-down would remove is first
// offered to the update extensions (inplace_trigger.go), and only removed if they
// cannot update it. The result asks for the next pass when no watch would bring it.
func (r *Reconciler) reconcileReplicas(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, tokenAvailable bool, seen *observed) (ctrl.Result, error) {
	outdated := seen.outdated(kcp, time.Now())
	seen.criticalChange = criticalChange(kcp, *seen)
	var step scaleStep
	step, seen.blocked = nextStep(kcp, *seen, outdated, tokenAvailable)
	if step != stepNone && desiredReplicas(kcp) == int32(seen.machines.Len()) && outdated.Len() > 0 {
		// A rollout's server step (a replacement or an in-place update) waits for
		// an etcd snapshot of the cluster as it is (rollout_snapshot.go).
		gate, err := r.snapshotBeforeRollout(ctx, cluster, kcp)
		if err != nil || !gate.proceed {
			seen.blocked, seen.rolloutSnapshot = gate.message, gate.reason
			return ctrl.Result{RequeueAfter: gate.requeueAfter}, err
		}
	}
	switch step {
	case stepScaleUp:
		return ctrl.Result{}, r.scaleUp(ctx, cluster, kcp, seen.machines, outdated)
	case stepScaleDown:
		victim := selectMachineForScaleDown(ctx, cluster, seen.machines, outdated)
		inPlace, err := r.tryInPlaceUpdate(ctx, cluster, kcp, seen, victim, outdated)
		if err != nil || inPlace.taken {
			return ctrl.Result{RequeueAfter: inPlace.requeueAfter}, err
		}
		seen.notInPlace = inPlace.notInPlace
		seen.blocked, err = r.removeServer(ctx, kcp, victim, seen.machines)
		return ctrl.Result{}, err
	}
	if seen.blocked == "" && outdated.Len() == 0 {
		// The servers need nothing else: a certificate renewal in place may start. Its
		// progress is on the workload cluster, which no watch follows.
		if started, err := r.startRenewal(ctx, cluster, kcp, seen); err != nil || started {
			return ctrl.Result{RequeueAfter: renewalPoll}, err
		}
	}
	return ctrl.Result{}, nil
}

// scaleStep is the one operation a pass may take on the servers.
type scaleStep int

const (
	stepNone scaleStep = iota
	stepScaleUp
	stepScaleDown
)

// nextStep decides the pass's operation from what it observed, and why it waits when
// one is needed but not allowed yet. It is pure, so the decision table is tested alone.
func nextStep(kcp *controlplanev1.KThreesControlPlane, seen observed, outdated collections.Machines, tokenAvailable bool) (scaleStep, string) {
	want, have := desiredReplicas(kcp), int32(seen.machines.Len())
	rollout := want == have && outdated.Len() > 0
	if want == have && !rollout {
		return stepNone, ""
	}
	if rollout && len(seen.updatingInPlace) > 0 {
		// Only an update CAPI has not started gets this far (inplace_hold.go): one
		// update at a time, and that server is never replaced for it.
		return stepNone, "the rollout waits for the in-place update of " + list(seen.updatingInPlace)
	}
	grow := want > have || (rollout && maxSurge(kcp) > 0)
	if grow && !tokenAvailable {
		return stepNone, "the join token is not available (see TokenAvailable)"
	}
	if have == 0 {
		// The first server initializes the cluster; nothing to check before it.
		return stepScaleUp, ""
	}
	if seen.criticalChange != "" {
		// k3s would refuse every new server; removing one would only shrink the
		// cluster (critical.go).
		return stepNone, seen.criticalChange
	}
	if rollout && !grow && !externalDatastore(kcp) && want < 3 {
		return stepNone, "maxSurge 0 removes a server before creating its replacement; with fewer than 3 servers that loses etcd quorum"
	}
	if rollout && !grow && want < 2 {
		return stepNone, "maxSurge 0 removes a server before creating its replacement; with a single server that leaves the cluster without an API server"
	}
	blocked := preflight(seen.machines, seen.nodes, isTrue(kcp.Status.Initialization.ControlPlaneInitialized))
	if _, _, remediating := remediationFor(kcp); remediating && grow {
		// A replacement tolerates other servers marked unhealthy (they wait for it);
		// the plain preflight would block it behind them forever.
		blocked = replacementPreflight(seen.machines, seen.nodes, externalDatastore(kcp))
	}
	if blocked != "" {
		return stepNone, blocked
	}
	if grow {
		return stepScaleUp, ""
	}
	return stepScaleDown, ""
}

// maxSurge is spec.rolloutStrategy.rollingUpdate.maxSurge: 1 unless set to 0.
func maxSurge(kcp *controlplanev1.KThreesControlPlane) int {
	rs := kcp.Spec.RolloutStrategy
	if rs == nil || rs.RollingUpdate == nil || rs.RollingUpdate.MaxSurge == nil {
		return 1
	}
	return rs.RollingUpdate.MaxSurge.IntValue()
}

// rolloutDeadlines are the times after which servers created earlier are replaced:
// spec.rolloutAfter (cluster-api-k3s's field) and spec.rollout.after (the contract's,
// which a ClusterClass topology sets). Either may be set, or both; each applies.
func rolloutDeadlines(kcp *controlplanev1.KThreesControlPlane) []time.Time {
	var out []time.Time
	if ra := kcp.Spec.RolloutAfter; ra != nil {
		out = append(out, ra.Time)
	}
	if after := kcp.Spec.Rollout.After; !after.IsZero() {
		out = append(out, after.Time)
	}
	return out
}

// untilRolloutAfter is how long until the next rollout deadline makes servers
// outdated: a real time-based event, so the one place this controller requeues
// after a delay.
func untilRolloutAfter(kcp *controlplanev1.KThreesControlPlane, now time.Time) time.Duration {
	var soonest time.Duration
	for _, ra := range rolloutDeadlines(kcp) {
		if d := ra.Sub(now); d > 0 && (soonest == 0 || d < soonest) {
			soonest = d
		}
	}
	return soonest
}
