package controlplane

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/renewalplan"
)

// What a certificate report can cause is bounded (docs/security.md): the report is
// read from the workload cluster's Events, which anyone who may create Events there
// can forge. A restart that did not change the reported expiry is not escalated
// (renewalplan.Stopped), and servers are replaced for their certificates one per
// control plane per renewalplan.ReplaceInterval.

// limitReplacements picks the one server the rollout may replace for its
// certificates, and records the choice on kcp (CertificatesReplacementAnnotation)
// before anything is replaced, guarded by the resourceVersion the pass read: a pass
// from a cache that lacks the last record cannot store a second choice within the
// interval. When the record cannot be stored, nothing is replaced in this pass; the
// write that changed the object brings another pass, and the requeue makes sure.
func (r *Reconciler) limitReplacements(ctx context.Context, kcp *controlplanev1.KThreesControlPlane, seen *observed) error {
	v := &seen.renewal
	v.replaceAllowed, v.replaceHeld, v.replaceNext = "", "", time.Time{}
	if !v.decided || v.days <= 0 {
		return nil
	}
	var due []*clusterv1.Machine
	for _, m := range seen.machines {
		if action, _ := renewalplan.Decide(m, v.days, v.inPlace, v.now); action == renewalplan.Replace {
			due = append(due, m)
		}
	}
	last, hasLast := renewalplan.ParseReplacement(kcp.Annotations[controlplanev1.CertificatesReplacementAnnotation])
	allowed, write, next := renewalplan.ReplaceAllowed(last, hasLast, due, v.now)
	if write {
		record := renewalplan.Replacement{Machine: allowed, At: v.now}.String()
		// A copy: the write's answer must not replace what the pass has computed.
		stored := kcp.DeepCopy()
		base := stored.DeepCopy()
		if stored.Annotations == nil {
			stored.Annotations = map[string]string{}
		}
		stored.Annotations[controlplanev1.CertificatesReplacementAnnotation] = record
		err := r.Client.Patch(ctx, stored, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsConflict(err) {
			v.replaceNext = v.now.Add(replaceRecordRetry)
			return nil
		}
		if err != nil {
			return fmt.Errorf("recording the certificate replacement of %s: %w", allowed, err)
		}
		if kcp.Annotations == nil {
			kcp.Annotations = map[string]string{}
		}
		kcp.Annotations[controlplanev1.CertificatesReplacementAnnotation] = record
		// The pass's own write: its final writes are guarded by this version.
		kcp.ResourceVersion, seen.storedVersion = stored.ResourceVersion, stored.ResourceVersion
	}
	v.replaceAllowed, v.replaceNext = allowed, next
	v.replaceHeld = renewalplan.HeldMessage(due, allowed, next)
	return nil
}

// replaceRecordRetry is when a pass that could not record a replacement tries again.
const replaceRecordRetry = 5 * time.Second

// untilReplaceNext is how long until the next server may be replaced for its
// certificates (0: none waits): a time no watch reports.
func (v renewalView) untilReplaceNext(now time.Time) time.Duration {
	if v.replaceNext.IsZero() || !v.replaceNext.After(now) {
		return 0
	}
	return v.replaceNext.Sub(now) + time.Second
}

// setRenewalHeld writes CertificateRenewalHeld: True while a restart renewed nothing
// (the Machines and what the user may do) or a replacement waits for the limit.
func setRenewalHeld(kcp *controlplanev1.KThreesControlPlane, o observed) {
	v := o.renewal
	if !v.decided || o.machines == nil {
		return
	}
	all := append(o.machines.UnsortedList(), v.workers.UnsortedList()...)
	cond := metav1.Condition{Type: controlplanev1.CertificateRenewalHeldCondition, Status: metav1.ConditionFalse,
		Reason: controlplanev1.CertificateRenewalNotHeldReason, Message: "No certificate renewal is held back"}
	var msgs []string
	if stopped := renewalplan.StoppedMessage(all, v.days, v.now); stopped != "" {
		cond.Status, cond.Reason = metav1.ConditionTrue, controlplanev1.RestartRenewedNothingReason
		msgs = append(msgs, stopped)
	}
	if v.replaceHeld != "" {
		if cond.Status != metav1.ConditionTrue {
			cond.Status, cond.Reason = metav1.ConditionTrue, controlplanev1.ReplacementRateLimitedReason
		}
		msgs = append(msgs, v.replaceHeld)
	}
	if cooldown := renewalplan.CooldownMessage(all, v.days, v.now); cooldown != "" {
		if cond.Status != metav1.ConditionTrue {
			cond.Status, cond.Reason = metav1.ConditionTrue, controlplanev1.RestartRateLimitedReason
		}
		msgs = append(msgs, cooldown)
	}
	if len(msgs) > 0 {
		cond.Message = strings.Join(msgs, "; ")
	}
	conditions.Set(kcp, cond)
}
