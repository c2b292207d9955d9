package controlplane

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/serverplan"
)

// Remediation replaces servers that a MachineHealthCheck marked unhealthy; its rules
// are serverplan.DecideRemediation's. This file carries the decision out: it deletes
// the unhealthy Machine, records the remediation on the control plane, and reports
// the Remediating condition. The regular scale-up then creates the replacement
// (scale.go), which carries the remediation-for annotation.

const (
	// remediatingCondition reports remediation on the KThreesControlPlane: True while an
	// unhealthy server is being replaced, False with a reason saying why an unhealthy
	// server is not replaced, False/NotRemediating when there is nothing to do.
	remediatingCondition = "Remediating"

	// remediationDeletionFailedReason is the Remediating condition's reason when the
	// unhealthy server could not be deleted (the other reasons are the decision's).
	remediationDeletionFailedReason = "DeletionFailed"
)

// reconcileRemediation deletes at most one unhealthy server. done=true means it acted
// (or must wait for retryPeriod) and the caller must not scale in this pass;
// result.RequeueAfter is set only for retryPeriod waits, which no watch would end.
// It sets the Remediating condition and, when it deletes, the kcp's in-progress
// annotation and status.lastRemediation, which the caller's deferred patch writes.
func (r *Reconciler) reconcileRemediation(ctx context.Context, _ *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, seen *observed) (done bool, result ctrl.Result, err error) {
	log := ctrl.LoggerFrom(ctx)
	if err := r.clearRecoveredRemediations(ctx, seen.machines); err != nil {
		return false, ctrl.Result{}, err
	}
	d := serverplan.DecideRemediation(kcp, seen.machines, seen.nodes, time.Now())
	if d.DropStaleInProgress {
		log.Info("Dropping a stale remediation-in-progress annotation", "value", kcp.Annotations[serverplan.RemediationInProgressAnnotation])
		delete(kcp.Annotations, serverplan.RemediationInProgressAnnotation)
	}
	status := metav1.ConditionFalse
	if d.Reason == serverplan.RemediatingReason {
		status = metav1.ConditionTrue
	}
	defer func() {
		conditions.Set(kcp, metav1.Condition{Type: remediatingCondition, Status: status, Reason: d.Reason, Message: d.Message})
	}()

	if d.Victim == nil {
		if d.Message != "" && !d.InProgress {
			log.V(2).Info("An unhealthy server is not remediated", "reason", d.Reason, "why", d.Message)
		}
		return d.Wait > 0, ctrl.Result{RequeueAfter: max(d.Wait, d.Recheck)}, nil
	}

	value, err := d.Data.Marshal()
	if err != nil {
		return false, ctrl.Result{}, err
	}
	if err := r.deleteServer(ctx, kcp, d.Victim); err != nil {
		status, d.Reason = metav1.ConditionFalse, remediationDeletionFailedReason
		d.Message = fmt.Sprintf("Deleting unhealthy Machine %s failed: %v", d.Victim.Name, err)
		return false, ctrl.Result{}, fmt.Errorf("deleting unhealthy Machine %s: %w", d.Victim.Name, err)
	}
	if kcp.Annotations == nil {
		kcp.Annotations = map[string]string{}
	}
	kcp.Annotations[serverplan.RemediationInProgressAnnotation] = value
	kcp.Status.LastRemediation = &controlplanev1.LastRemediationStatus{
		Machine: d.Data.Machine, Time: d.Data.Timestamp, RetryCount: d.Data.RetryCount,
	}
	log.Info("Deleted an unhealthy control plane Machine to replace it", "Machine", d.Victim.Name, "retryCount", d.Data.RetryCount)
	return true, ctrl.Result{}, nil
}
