package controlplane

import (
	"context"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/serverplan"
)

// reconcileReplicas takes the one step toward spec.replicas servers that are all up
// to date that serverplan.NextStep decides. A rollout is scaling with a preference:
// with maxSurge 1 a new server comes first and an outdated one goes next; with
// maxSurge 0 an outdated one goes first. The scale-down choice always prefers
// outdated servers, so either way each outdated server is replaced one at a time,
// behind the same preflight checks as scaling.
// With in-place updates, the outdated server a scale-down would remove is first
// offered to the update extensions (inplace_trigger.go), and only removed if they
// cannot update it. The result asks for the next pass when no watch would bring it.
func (r *Reconciler) reconcileReplicas(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, tokenAvailable bool, seen *observed) (ctrl.Result, error) {
	outdated := seen.outdated(kcp, time.Now())
	seen.criticalChange = criticalChange(kcp, *seen)
	var step serverplan.Step
	step, seen.blocked = serverplan.NextStep(kcp, seen.plan(), outdated, tokenAvailable)
	if step != serverplan.StepNone && desiredReplicas(kcp) == int32(seen.machines.Len()) && outdated.Len() > 0 {
		// A rollout's server step (a replacement or an in-place update) waits for
		// an etcd snapshot of the cluster as it is (rollout_snapshot.go).
		gate, err := r.snapshotBeforeRollout(ctx, cluster, kcp)
		if err != nil || !gate.proceed {
			seen.blocked, seen.rolloutSnapshot = gate.message, gate.reason
			return ctrl.Result{RequeueAfter: gate.requeueAfter}, err
		}
	}
	switch step {
	case serverplan.StepScaleUp:
		if why := unsupportedOptions(kcp); why != "" {
			// The spec changes to fix it, which wakes the control plane.
			seen.blocked = why
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, r.scaleUp(ctx, cluster, kcp, seen.machines, outdated)
	case serverplan.StepScaleDown:
		victim := serverplan.SelectMachineForScaleDown(ctx, cluster, seen.machines, outdated, updatingInPlace)
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

// plan is what the scaling decision needs of the pass's observations.
func (o observed) plan() serverplan.Observed {
	return serverplan.Observed{Machines: o.machines, Nodes: o.nodes, UpdatingInPlace: o.updatingInPlace, CriticalChange: o.criticalChange}
}
