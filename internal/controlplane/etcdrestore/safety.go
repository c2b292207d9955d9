package etcdrestore

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/restoreplan"
	"github.com/capk3s/capk3s/internal/etcdsnapshot"
	"github.com/capk3s/capk3s/internal/k3s/supervisor"
)

// takeSafetySnapshot saves the running cluster to the control plane's S3 folder
// under the restore's safety name, then finds it in k3s's list and records its
// name: the restore deletes nothing before that name is in its status. A request
// that never reached k3s is retried; k3s's refusal, or a save whose copy is not in
// S3, refuses the restore with nothing deleted.
func (r *Reconciler) takeSafetySnapshot(ctx context.Context, restore *controlplanev1.KThreesEtcdRestore, w world) error {
	c, s3, err := r.supervisorCall(ctx, w.cluster, w.ControlPlane)
	if err != nil {
		return fmt.Errorf("taking the safety snapshot: %w", err)
	}
	req := supervisor.SaveRequest{Name: w.SafetyPrefix, S3: s3}
	// k3s takes the local copy's folder from the request alone: without it the copy
	// would land in k3s's default folder, not the control plane's snapshots.directory.
	req.Dir, req.Compress = etcdsnapshot.LocalSettings(w.ControlPlane)
	res, err := c.Save(ctx, req)
	switch {
	case supervisor.NotSent(err):
		return fmt.Errorf("taking the safety snapshot: %w", err)
	case err != nil:
		return r.refuse(ctx, restore, fmt.Sprintf("the safety snapshot %s of the running cluster failed: %v", w.SafetyPrefix, err))
	}
	ctrl.LoggerFrom(ctx).Info("Took the safety snapshot before the restore", "created", res.Created)
	found := w.World
	found.Proof = r.prove(ctx, w.cluster, w.ControlPlane)
	if p := found.Proof; p.Unreachable != "" || p.Refused != "" {
		// The next pass lists again and finds it.
		return fmt.Errorf("listing the safety snapshot: %s%s", p.Unreachable, p.Refused)
	}
	name := restoreplan.FindSafety(found)
	if name == "" {
		return r.refuse(ctx, restore, fmt.Sprintf("k3s answered the safety snapshot %s with %v, but lists no copy of it ready in bucket %q, folder %q",
			w.SafetyPrefix, res.Created, w.S3.Bucket, w.S3.Folder))
	}
	before := restore.DeepCopy()
	restore.Status.SafetySnapshot = name
	restore.Status.Message = fmt.Sprintf("safety snapshot %s taken; deleting the old servers next", name)
	return r.Client.Status().Patch(ctx, restore, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// refuse ends a Pending restore as Refused, from an action that failed before
// anything was deleted.
func (r *Reconciler) refuse(ctx context.Context, restore *controlplanev1.KThreesEtcdRestore, why string) error {
	before := restore.DeepCopy()
	d := restoreplan.Decision{Phase: controlplanev1.EtcdRestoreRefused, Message: "refused, nothing was deleted: " + why}
	s := &restore.Status
	now := metav1.Now()
	s.Phase, s.Message, s.CompletionTime = d.Phase, d.Message, &now
	for _, c := range restoreplan.Conditions(controlplanev1.EtcdRestorePending, d) {
		c.ObservedGeneration = restore.Generation
		meta.SetStatusCondition(&s.Conditions, c)
	}
	ctrl.LoggerFrom(ctx).Info("Restore refused", "message", d.Message)
	return r.Client.Status().Patch(ctx, restore, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// releaseFinalizer removes the restore's finalizer once the restore no longer
// holds the control plane: it ended well or never started, it is deleted while it
// holds nothing (Pending, or the control plane no longer held), or a new restore
// took the lock over from it. A restore that holds the servers (deleting them,
// restoring the first one, or Failed with the lock) keeps it: deleted, the control
// plane would join servers to a cluster that has none.
func (r *Reconciler) releaseFinalizer(ctx context.Context, restore *controlplanev1.KThreesEtcdRestore, w world) error {
	if !slices.Contains(restore.Finalizers, controlplanev1.EtcdRestoreFinalizer) {
		return nil
	}
	p := restore.Status.Phase
	holdsLock := w.ControlPlane != nil && restoreplan.LockHolder([]controlplanev1.KThreesEtcdRestore{*restore},
		w.ControlPlane.Annotations[controlplanev1.EtcdRestoreLockAnnotation]).Holder == restore.Name
	gone := w.ControlPlane == nil || !w.ControlPlane.DeletionTimestamp.IsZero() || w.ClusterDeleting
	release := false
	switch {
	case p == controlplanev1.EtcdRestoreSucceeded || p == controlplanev1.EtcdRestoreRefused, gone, !holdsLock:
		release = true
	case !restore.DeletionTimestamp.IsZero():
		release = !restoreplan.Holds(p) && p != controlplanev1.EtcdRestoreFailed
	}
	if !release {
		return nil
	}
	before := restore.DeepCopy()
	restore.Finalizers = slices.DeleteFunc(restore.Finalizers, func(f string) bool { return f == controlplanev1.EtcdRestoreFinalizer })
	if err := r.Client.Patch(ctx, restore, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("removing the restore's finalizer: %w", err)
	}
	return nil
}
