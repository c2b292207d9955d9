package restoreplan

import (
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

// HoldingRestore is the name of the restore among restores that holds the
// control plane of clusterName, "" when none does.
func HoldingRestore(restores []controlplanev1.KThreesEtcdRestore, clusterName string) string {
	for i := range restores {
		if restores[i].Spec.ClusterName == clusterName && Holds(restores[i].Status.Phase) {
			return restores[i].Name
		}
	}
	return ""
}
