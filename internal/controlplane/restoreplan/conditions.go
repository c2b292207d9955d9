package restoreplan

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// steps are the restore's step conditions in order, each with the phase in which it
// runs: a step is done once the restore is past its phase.
var steps = []struct {
	condition string
	phase     controlplanev1.EtcdRestorePhase
}{
	{controlplanev1.EtcdRestoreStartedCondition, controlplanev1.EtcdRestorePending},
	{controlplanev1.EtcdRestoreServersDeletedCondition, controlplanev1.EtcdRestoreDeletingServers},
	{controlplanev1.EtcdRestoreFirstServerRestoredCondition, controlplanev1.EtcdRestoreRestoringFirstServer},
	{controlplanev1.EtcdRestoreServersJoinedCondition, controlplanev1.EtcdRestoreJoiningServers},
}

func order(p controlplanev1.EtcdRestorePhase) int {
	for i, s := range steps {
		if s.phase == p {
			return i
		}
	}
	return len(steps) // Succeeded
}

// Conditions are the restore's conditions after a pass that found it in phase from
// and leaves it as d says: the steps before the current one True, the current one
// False with the message (Failed or Refused when the restore ended there), the rest
// False and waiting, and Ready for the whole.
func Conditions(from controlplanev1.EtcdRestorePhase, d Decision) []metav1.Condition {
	if from == "" {
		from = controlplanev1.EtcdRestorePending
	}
	current, endReason := order(d.Phase), ""
	switch d.Phase {
	case controlplanev1.EtcdRestoreFailed:
		current, endReason = order(from), controlplanev1.EtcdRestoreFailedReason
	case controlplanev1.EtcdRestoreRefused:
		current, endReason = order(from), controlplanev1.EtcdRestoreRefusedReason
	}
	out := make([]metav1.Condition, 0, len(steps)+1)
	for i, s := range steps {
		c := metav1.Condition{Type: s.condition, Status: metav1.ConditionFalse, Reason: controlplanev1.EtcdRestoreWaitingReason}
		switch {
		case i < current:
			c.Status, c.Reason = metav1.ConditionTrue, controlplanev1.EtcdRestoreDoneReason
		case i == current && endReason != "":
			c.Reason, c.Message = endReason, d.Message
		case i == current:
			c.Reason, c.Message = controlplanev1.EtcdRestoreInProgressReason, d.Message
		}
		out = append(out, c)
	}
	ready := metav1.Condition{Type: controlplanev1.EtcdRestoreReadyCondition, Status: metav1.ConditionFalse,
		Reason: controlplanev1.EtcdRestoreInProgressReason, Message: d.Message}
	switch {
	case d.Phase == controlplanev1.EtcdRestoreSucceeded:
		ready.Status, ready.Reason = metav1.ConditionTrue, controlplanev1.EtcdRestoreDoneReason
	case endReason != "":
		ready.Reason = endReason
	case d.Phase == controlplanev1.EtcdRestorePending && d.Snapshot == "":
		ready.Reason = controlplanev1.EtcdRestoreSnapshotNotReadyReason
	}
	return append(out, ready)
}

// Holds reports whether a restore in this phase holds the control plane's servers:
// from the moment it deletes the old servers until its first server has restored,
// the control plane controller must not create, delete or change any server.
func Holds(p controlplanev1.EtcdRestorePhase) bool {
	return p == controlplanev1.EtcdRestoreDeletingServers || p == controlplanev1.EtcdRestoreRestoringFirstServer
}

// LockValue is the value of the control plane's restore lock for a restore.
func LockValue(r *controlplanev1.KThreesEtcdRestore) string {
	return r.Name + "/" + string(r.UID)
}

// takeoverSuffix marks a lock taken over from a failed restore: the restore that
// holds it proved its snapshot against that restore's record, not on a running
// cluster, and takes no safety snapshot.
const takeoverSuffix = ";takeover"

// TakeoverLockValue is the lock's value for a restore that takes over from a
// failed one.
func TakeoverLockValue(r *controlplanev1.KThreesEtcdRestore) string {
	return LockValue(r) + takeoverSuffix
}

// HoldingRestore is the name of the restore among restores that holds the
// control plane of clusterName, "" when none does. lock is the control plane's
// restore lock annotation: a Failed restore that still holds it holds the servers
// too, for it failed with no working server left, and the control plane must not
// join servers to nothing until a new restore takes over. A restore that took the
// lock over holds the servers from that moment, while still Pending: the failed
// one no longer does, and the servers are as it left them (until it moves on from
// Pending: then, as any restore, it holds them only while it deletes them and
// restores the first one).
func HoldingRestore(restores []controlplanev1.KThreesEtcdRestore, clusterName, lock string) string {
	for i := range restores {
		r := &restores[i]
		if r.Spec.ClusterName != clusterName {
			continue
		}
		// The takeover's own gap: Pending (no phase yet included) with the lock taken
		// over; from DeletingServers on, Holds decides, as for any restore, so that
		// the control plane joins the servers once the first one restored.
		pending := r.Status.Phase == "" || r.Status.Phase == controlplanev1.EtcdRestorePending
		tookOver := pending && lock == TakeoverLockValue(r)
		if Holds(r.Status.Phase) || tookOver || (r.Status.Phase == controlplanev1.EtcdRestoreFailed && strings.TrimSuffix(lock, takeoverSuffix) == LockValue(r)) {
			return r.Name
		}
	}
	return ""
}

// LockHolder resolves the control plane's restore lock against the restores of
// the namespace: the restore it names, if that one exists (same UID) and has not
// ended well (Succeeded) or never started (Refused).
func LockHolder(restores []controlplanev1.KThreesEtcdRestore, lock string) Lock {
	holder, takenOver := strings.CutSuffix(lock, takeoverSuffix)
	for i := range restores {
		r := &restores[i]
		if holder == "" || LockValue(r) != holder {
			continue
		}
		if p := r.Status.Phase; p == controlplanev1.EtcdRestoreSucceeded || p == controlplanev1.EtcdRestoreRefused {
			return Lock{}
		}
		return Lock{Holder: r.Name, HolderPhase: r.Status.Phase, HolderSnapshot: r.Status.SnapshotName, HolderSafetySnapshot: r.Status.SafetySnapshot,
			TakenOver: takenOver}
	}
	return Lock{}
}
