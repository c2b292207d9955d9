package controlplane

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/patch"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// syncMachine brings one server Machine in line with what the control plane wants
// without replacing it: template metadata, the etcd hook, deletion timeouts,
// minReadySeconds and taints in its spec (CAPI's Machine controller then changes the
// Node's taints in place), and its UpToDate condition in its status. CAPI leaves
// UpToDate on control-plane Machines to their control plane (the contract's
// "MinReadySeconds and UpToDate propagation"); the Cluster's
// ControlPlaneMachinesUpToDate and this control plane's counters read it.
//
// The patch helper writes metadata and spec only where they changed, and the condition
// is applied only when it differs (machine_uptodate.go), so a Machine that is already
// right costs no write. A Machine being deleted keeps its spec (CAPI's
// deletion is under way) and only gets its condition.
func (r *Reconciler) syncMachine(ctx context.Context, kcp *controlplanev1.KThreesControlPlane, m *clusterv1.Machine,
	objs serverObjects, renewal renewalView, wantLabels, wantAnnotations map[string]string) error {
	helper, err := patch.NewHelper(m, r.Client)
	if err != nil {
		return fmt.Errorf("creating a patch helper for Machine %s: %w", m.Name, err)
	}
	if m.DeletionTimestamp.IsZero() {
		mergeMetadata(m, wantLabels, wantAnnotations)
		if !externalDatastore(kcp) {
			ensureEtcdHook(m)
		}
		m.Spec.Deletion = desiredDeletion(kcp)
		m.Spec.MinReadySeconds = desiredMinReadySeconds(kcp)
		m.Spec.Taints = desiredTaints(kcp)
	}
	reason := upToDateReason(m, objs, kcp, time.Now())
	if reason == "" {
		reason = renewal.replaceReason(m)
	}
	upToDate := machineUpToDate(reason)
	if updatingInPlace(m) {
		// CAPI's reason for a Machine whose spec is the wanted one while it still
		// updates in place.
		upToDate = metav1.Condition{Type: clusterv1.MachineUpToDateCondition, Status: metav1.ConditionFalse,
			Reason: clusterv1.MachineUpToDateUpdatingReason, Message: "* Updating in place"}
	}
	if err := helper.Patch(ctx, m); err != nil {
		return fmt.Errorf("updating Machine %s in place: %w", m.Name, err)
	}
	return r.applyMachineUpToDate(ctx, m, upToDate)
}

// machineUpToDate is the Machine's UpToDate condition from upToDateReason's verdict.
// The message is a "* "-prefixed line, the shape CAPI's controllers use, so that tools
// that aggregate the condition across Machines read it as they read KCP's.
func machineUpToDate(reason string) metav1.Condition {
	c := metav1.Condition{Type: clusterv1.MachineUpToDateCondition, Status: metav1.ConditionTrue, Reason: clusterv1.MachineUpToDateReason}
	if reason != "" {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, clusterv1.MachineNotUpToDateReason, "* "+reason
	}
	return c
}
