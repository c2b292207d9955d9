package etcdsnapshot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s/supervisor"
	"github.com/capk3s/capk3s/internal/workload"
)

// request checks, marks the object Running and sends the one request.
func (r *Reconciler) request(ctx context.Context, s *controlplanev1.KThreesEtcdSnapshot, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane) (ctrl.Result, error) {
	if reason, msg := refusal(s, kcp); reason != "" {
		return r.fail(ctx, s, reason, msg)
	}
	if f := r.inflight.get(s); f != nil && !f.finished() {
		// At most one request per snapshot: this one is still out.
		return r.wait(f), nil
	}
	newClient := r.Supervisor
	if newClient == nil {
		newClient = newClientFor
	}
	c, err := newClient(ctx, r.APIReader, cluster)
	if err != nil {
		return r.notYet(ctx, s, err.Error())
	}
	req := supervisor.SaveRequest{Name: requestedName(s)}
	req.Dir, req.Compress = localSettings(kcp)
	if wantsS3(s, kcp) {
		if req.S3, err = s3Request(ctx, r.APIReader, kcp.Namespace, s3Settings(kcp), s3Timeout(kcp)); err != nil {
			return r.notYet(ctx, s, err.Error())
		}
	}

	before := s.DeepCopy()
	now := metav1.Now()
	s.Status.Phase, s.Status.RequestedName, s.Status.StartTime = controlplanev1.EtcdSnapshotRunning, req.Name, &now
	setReady(s, metav1.ConditionFalse, controlplanev1.EtcdSnapshotRunningReason, "Requested from k3s as "+req.Name)
	// The optimistic lock makes a pass that read an older copy (Pending) fail here
	// instead of sending a second request.
	if err := r.patchStatus(ctx, s, before); err != nil {
		return ctrl.Result{}, err
	}

	ctrl.LoggerFrom(ctx).Info("Requesting an etcd snapshot from k3s", "name", req.Name, "s3", req.S3 != nil)
	return r.wait(r.inflight.send(ctx, s, c, req)), nil
}

// wait is a pass of a snapshot whose request is in flight: the answer wakes the
// snapshot, and the request's deadline is the latest it can come.
func (r *Reconciler) wait(f *flight) ctrl.Result {
	return ctrl.Result{RequeueAfter: time.Until(f.deadline) + retryInterval}
}

// answered reads the answer of the request this process sent, once it came.
func (r *Reconciler) answered(ctx context.Context, s *controlplanev1.KThreesEtcdSnapshot, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, f *flight) (ctrl.Result, error) {
	if !f.finished() {
		return r.wait(f), nil
	}
	key := client.ObjectKeyFromObject(s)
	res, err := r.readAnswer(ctx, s, cluster, kcp, f.res, f.err)
	if err == nil {
		// Read: the status says it now, or k3s's records will.
		r.inflight.forget(key)
	}
	return res, err
}

// readAnswer decides what k3s's answer (or its absence) says of the snapshot.
func (r *Reconciler) readAnswer(ctx context.Context, s *controlplanev1.KThreesEtcdSnapshot, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, res supervisor.SaveResult, err error) (ctrl.Result, error) {
	var se *supervisor.StatusError
	switch {
	case supervisor.NotSent(err):
		// Nothing reached k3s: back to Pending, to be sent again.
		before := s.DeepCopy()
		s.Status.Phase, s.Status.RequestedName, s.Status.StartTime = controlplanev1.EtcdSnapshotPending, "", nil
		if perr := r.patchStatus(ctx, s, before); perr != nil {
			return ctrl.Result{}, perr
		}
		return r.notYet(ctx, s, err.Error())
	case errors.As(err, &se):
		return r.fail(ctx, s, controlplanev1.EtcdSnapshotRejectedReason, rejection(se))
	case err != nil:
		// Sent, no answer: k3s may have taken it; its records will tell.
		ctrl.LoggerFrom(ctx).Info("No answer from k3s to the snapshot request; looking for its records", "error", err.Error())
		return ctrl.Result{RequeueAfter: retryInterval}, nil
	case len(res.Created) == 0:
		// k3s answers 200 with nothing created when writing the file failed; its
		// record of the failure has the reason.
		return r.resolveAnswered(ctx, s, cluster, kcp, false)
	}
	before := s.DeepCopy()
	s.Status.Snapshot = &controlplanev1.EtcdSnapshotResult{Name: res.Created[0]}
	if err := r.patchStatus(ctx, s, before); err != nil {
		return ctrl.Result{}, err
	}
	return r.resolve(ctx, s, cluster, kcp)
}

// rejection words k3s's refusal for the user.
func rejection(se *supervisor.StatusError) string {
	switch se.Code {
	case http.StatusUnauthorized:
		return "k3s refused the join token (401): the token Secret does not hold the servers' token; " + se.Message
	case http.StatusInternalServerError:
		return "k3s could not take the snapshot (500, the server's log has the details under the error ID): " + se.Message
	}
	return se.Error()
}

// resolve reads k3s's records of a requested snapshot.
func (r *Reconciler) resolve(ctx context.Context, s *controlplanev1.KThreesEtcdSnapshot, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane) (ctrl.Result, error) {
	return r.resolveAnswered(ctx, s, cluster, kcp, true)
}

// resolveAnswered reads the records; created false says k3s answered that it
// created nothing, so no record to come will change the verdict.
func (r *Reconciler) resolveAnswered(ctx context.Context, s *controlplanev1.KThreesEtcdSnapshot, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, created bool) (ctrl.Result, error) {
	var records []workload.EtcdSnapshot
	reader, err := r.Workload(ctx, client.ObjectKeyFromObject(cluster))
	if err == nil {
		records, err = workload.EtcdSnapshots(ctx, reader)
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("Reading k3s's snapshot records", "error", err.Error())
	}
	o := outcomeOf(s.Status.RequestedName, records, wantsS3(s, kcp))
	timedOut := s.Status.StartTime == nil || time.Since(s.Status.StartTime.Time) > r.resultTimeout()
	switch {
	case o.done && o.failure != "":
		s.Status.Snapshot = o.result
		return r.fail(ctx, s, controlplanev1.EtcdSnapshotK3sFailedReason, o.failure)
	case o.done:
		return r.succeed(ctx, s, o.result)
	case !created:
		return r.fail(ctx, s, controlplanev1.EtcdSnapshotK3sFailedReason, "k3s answered without taking a snapshot (a failed save); the server's log says why")
	case !timedOut:
		return ctrl.Result{RequeueAfter: retryInterval}, nil
	case s.Status.Snapshot != nil:
		// k3s answered with the name; its records did not follow (k3s only logs a
		// failure to write them). The snapshot exists.
		res := o.result
		if res == nil {
			res = s.Status.Snapshot
		}
		return r.succeed(ctx, s, res)
	}
	return r.fail(ctx, s, controlplanev1.EtcdSnapshotLostReason, fmt.Sprintf(
		"the request %s got no answer and k3s recorded no snapshot of that name within %s; create a new KThreesEtcdSnapshot to try again",
		s.Status.RequestedName, r.resultTimeout()))
}

// notYet keeps the snapshot Pending (nothing was sent), retried until
// UnreachableTimeout after its creation.
func (r *Reconciler) notYet(ctx context.Context, s *controlplanev1.KThreesEtcdSnapshot, why string) (ctrl.Result, error) {
	if time.Since(s.CreationTimestamp.Time) > r.unreachableTimeout() {
		return r.fail(ctx, s, controlplanev1.EtcdSnapshotUnreachableReason, "k3s could not be asked for a snapshot: "+why)
	}
	before := s.DeepCopy()
	s.Status.Phase = controlplanev1.EtcdSnapshotPending
	setReady(s, metav1.ConditionFalse, controlplanev1.EtcdSnapshotPendingReason, "Waiting to reach k3s: "+why)
	if err := r.patchStatus(ctx, s, before); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: retryInterval}, nil
}

func (r *Reconciler) succeed(ctx context.Context, s *controlplanev1.KThreesEtcdSnapshot, res *controlplanev1.EtcdSnapshotResult) (ctrl.Result, error) {
	before := s.DeepCopy()
	now := metav1.Now()
	s.Status.Phase, s.Status.Snapshot, s.Status.CompletionTime, s.Status.Error = controlplanev1.EtcdSnapshotSucceeded, res, &now, ""
	setReady(s, metav1.ConditionTrue, controlplanev1.EtcdSnapshotSucceededReason, succeededMessage(res))
	return ctrl.Result{}, r.patchStatus(ctx, s, before)
}

// fail ends the snapshot; s may carry changes not yet written (a partial result).
func (r *Reconciler) fail(ctx context.Context, s *controlplanev1.KThreesEtcdSnapshot, reason, msg string) (ctrl.Result, error) {
	before := s.DeepCopy()
	before.Status.Snapshot = nil
	now := metav1.Now()
	s.Status.Phase, s.Status.CompletionTime, s.Status.Error = controlplanev1.EtcdSnapshotFailed, &now, msg
	setReady(s, metav1.ConditionFalse, reason, msg)
	return ctrl.Result{}, r.patchStatus(ctx, s, before)
}

func setReady(s *controlplanev1.KThreesEtcdSnapshot, status metav1.ConditionStatus, reason, msg string) {
	conditions.Set(s, metav1.Condition{Type: controlplanev1.EtcdSnapshotReadyCondition, Status: status, Reason: reason, Message: msg, ObservedGeneration: s.Generation})
}

// patchStatus writes the status with an optimistic lock. A conflict is returned
// as an error: the pass read an older object and must start again.
func (r *Reconciler) patchStatus(ctx context.Context, s, before *controlplanev1.KThreesEtcdSnapshot) error {
	if err := r.Client.Status().Patch(ctx, s, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("KThreesEtcdSnapshot %s changed during the pass: %w", s.Name, err)
		}
		return fmt.Errorf("writing the status of KThreesEtcdSnapshot %s: %w", s.Name, err)
	}
	return nil
}

func (r *Reconciler) resultTimeout() time.Duration {
	if r.ResultTimeout > 0 {
		return r.ResultTimeout
	}
	return DefaultResultTimeout
}

func (r *Reconciler) unreachableTimeout() time.Duration {
	if r.UnreachableTimeout > 0 {
		return r.UnreachableTimeout
	}
	return DefaultUnreachableTimeout
}
