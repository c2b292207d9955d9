package etcdrestore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane"
	"github.com/capk3s/capk3s/internal/controlplane/restoreplan"
)

// +kubebuilder:rbac:groups=controlplane.cluster.x-k8s.io,resources=kthreesetcdrestores;kthreesetcdrestores/status,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=controlplane.cluster.x-k8s.io,resources=kthreesetcdsnapshots,verbs=get;list;watch
// +kubebuilder:rbac:groups=controlplane.cluster.x-k8s.io,resources=kthreescontrolplanes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// snapshotPoll is how often a restore waiting for a referenced KThreesEtcdSnapshot
// looks again. That kind is not watched: this controller must run where it is not
// installed, and a restore rarely waits for one.
const snapshotPoll = 10 * time.Second

// Reconciler reconciles KThreesEtcdRestores.
type Reconciler struct {
	Client client.Client
	// APIReader reads the server Machines live; SetupWithManager defaults it to the
	// manager's API reader.
	APIReader client.Reader
	// ClusterCache is this manager's connection to workload clusters; a restore
	// creates its first server only once it dropped the old one (restoreplan.OldAPI).
	// Nil when the manager has none.
	ClusterCache clustercache.ClusterCache
	// FirstServerDeadline is how long the restore's first server has to restore the
	// snapshot before the restore fails; zero means
	// restoreplan.DefaultFirstServerDeadline.
	FirstServerDeadline time.Duration
	// WatchFilterValue, when set, limits reconciling to objects labelled
	// cluster.x-k8s.io/watch-filter=<value>.
	WatchFilterValue string
}

// SetupWithManager registers the controller. Server Machines and control planes wake
// the restores of their cluster: every step waits for one of them to change.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	log := ctrl.LoggerFrom(ctx)
	return ctrl.NewControllerManagedBy(mgr).
		For(&controlplanev1.KThreesEtcdRestore{}).
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(r.restoresOfCluster)).
		Watches(&controlplanev1.KThreesControlPlane{}, handler.EnqueueRequestsFromMapFunc(r.restoresOfCluster)).
		WithOptions(options).
		WithEventFilter(predicates.ResourceHasFilterLabel(mgr.GetScheme(), log, r.WatchFilterValue)).
		Complete(r)
}

// restoresOfCluster maps an object labelled with its cluster to that cluster's
// unfinished restores, and the finished ones that still carry the finalizer: a
// Failed restore deleted while it held the lock lets go once another takes the lock
// over, which only the control plane's change announces.
func (r *Reconciler) restoresOfCluster(ctx context.Context, o client.Object) []reconcile.Request {
	cluster := o.GetLabels()[clusterv1.ClusterNameLabel]
	if cluster == "" {
		return nil
	}
	restores := &controlplanev1.KThreesEtcdRestoreList{}
	if err := r.Client.List(ctx, restores, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, rs := range restores.Items {
		if rs.Spec.ClusterName == cluster && (!rs.Status.Phase.Finished() || slices.Contains(rs.Finalizers, controlplanev1.EtcdRestoreFinalizer)) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&rs)})
		}
	}
	return out
}

// Reconcile runs one pass: observe, decide, record, act.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	restore := &controlplanev1.KThreesEtcdRestore{}
	if err := r.Client.Get(ctx, req.NamespacedName, restore); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if restore.Status.Phase.Finished() && !slices.Contains(restore.Finalizers, controlplanev1.EtcdRestoreFinalizer) {
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("Cluster", restore.Spec.ClusterName)
	ctx = ctrl.LoggerInto(ctx, log)

	w, err := r.observe(ctx, restore)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.releaseFinalizer(ctx, restore, w); err != nil || restore.Status.Phase.Finished() {
		return ctrl.Result{}, err
	}
	if err := r.ownByCluster(ctx, restore, w.cluster); err != nil {
		return ctrl.Result{}, err
	}
	d := restoreplan.Decide(restore.Name, restore.Status, w.World)
	// The status goes first: an action is only taken under a phase already stored, so
	// a manager killed after acting resumes in the phase that allowed it.
	if err := r.record(ctx, restore, w, d); err != nil {
		if apierrors.IsConflict(err) {
			// Decided from an older copy; the newer one brings another pass.
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if d.Phase == controlplanev1.EtcdRestorePending {
		return r.actPending(ctx, restore, w, d)
	}
	if d.Poll {
		return ctrl.Result{RequeueAfter: oldAPIPoll}, r.act(ctx, restore, w, d)
	}
	if m, ok := w.machines[d.FirstServer]; ok && d.Phase == controlplanev1.EtcdRestoreRestoringFirstServer {
		// Nothing watched announces the first server's deadline.
		due := w.FirstServerDue(m.CreationTimestamp.Time)
		return ctrl.Result{RequeueAfter: max(time.Until(due), 0) + time.Second}, r.act(ctx, restore, w, d)
	}
	if start := restore.Status.StartTime; start != nil && restoreplan.Holds(d.Phase) {
		// Nor the deadline for having a first server at all.
		return ctrl.Result{RequeueAfter: max(time.Until(w.StartDue(start.Time)), 0) + time.Second}, r.act(ctx, restore, w, d)
	}
	return ctrl.Result{}, r.act(ctx, restore, w, d)
}

// record writes the decision into the restore's status, with an optimistic lock so
// that a decision made from a stale copy is never stored over a newer one.
func (r *Reconciler) record(ctx context.Context, restore *controlplanev1.KThreesEtcdRestore, w world, d restoreplan.Decision) error {
	before := restore.DeepCopy()
	s := &restore.Status
	from := s.Phase
	if from != d.Phase {
		ctrl.LoggerFrom(ctx).Info("Restore phase", "from", from, "to", d.Phase, "message", d.Message)
	}
	now := metav1.Now()
	if s.StartTime == nil && d.Phase != controlplanev1.EtcdRestorePending && d.Phase != controlplanev1.EtcdRestoreRefused {
		s.StartTime = &now
	}
	if s.CompletionTime == nil && d.Phase.Finished() {
		s.CompletionTime = &now
	}
	s.Phase, s.Message, s.SnapshotName, s.FirstServer = d.Phase, d.Message, d.Snapshot, d.FirstServer
	s.SafetySnapshot = d.SafetySnapshot
	s.OldServerNodes = d.OldServerNodes
	if w.ControlPlane != nil {
		s.ControlPlaneName = w.ControlPlane.Name
	}
	for _, c := range restoreplan.Conditions(from, d) {
		c.ObservedGeneration = restore.Generation
		meta.SetStatusCondition(&s.Conditions, c)
	}
	s.ObservedGeneration = restore.Generation
	if equalStatus(before.Status, restore.Status) {
		return nil
	}
	return r.Client.Status().Patch(ctx, restore, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

func equalStatus(a, b controlplanev1.KThreesEtcdRestoreStatus) bool {
	return a.Phase == b.Phase && a.Message == b.Message && a.SnapshotName == b.SnapshotName && a.SafetySnapshot == b.SafetySnapshot &&
		a.FirstServer == b.FirstServer && a.ControlPlaneName == b.ControlPlaneName && slices.Equal(a.OldServerNodes, b.OldServerNodes) &&
		a.ObservedGeneration == b.ObservedGeneration && a.StartTime.Equal(b.StartTime) &&
		a.CompletionTime.Equal(b.CompletionTime) && conditionsEqual(a.Conditions, b.Conditions)
}

func conditionsEqual(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}

// actPending takes a Pending restore's one step: the lock, or the safety
// snapshot; otherwise it looks again later (a referenced snapshot running, an
// unreachable supervisor).
func (r *Reconciler) actPending(ctx context.Context, restore *controlplanev1.KThreesEtcdRestore, w world, d restoreplan.Decision) (ctrl.Result, error) {
	switch {
	case d.TakeLock:
		err := r.takeLock(ctx, restore, w.ControlPlane, d.TakeOver)
		if apierrors.IsConflict(err) {
			// Another restore (or a control plane pass) wrote it first: the next pass
			// reads who holds it.
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, err
	case d.TakeSafetySnapshot:
		return ctrl.Result{}, r.takeSafetySnapshot(ctx, restore, w)
	}
	return ctrl.Result{RequeueAfter: snapshotPoll}, nil
}

// act takes the decision's actions.
func (r *Reconciler) act(ctx context.Context, restore *controlplanev1.KThreesEtcdRestore, w world, d restoreplan.Decision) error {
	var errs []error
	for _, name := range d.Delete {
		if m, ok := w.machines[name]; ok {
			errs = append(errs, r.deleteServer(ctx, m))
		}
	}
	if len(d.DeleteNodes) > 0 {
		errs = append(errs, r.deleteNodes(ctx, w.cluster, d.DeleteNodes))
	}
	if d.CreateFirstServer {
		if _, err := controlplane.CreateRestoreServer(ctx, r.Client, w.cluster, w.ControlPlane, restore.Name, d.Snapshot); err != nil {
			errs = append(errs, fmt.Errorf("creating the first server: %w", err))
		}
	}
	return errors.Join(errs...)
}

// deleteServer releases an old server from every wait on the workload API
// (controlplane.ReleaseServerForRestore) and deletes it. Both steps are repeated on
// every pass until it is gone, so a control plane pass that put its etcd hook back
// before the restore held it is undone.
func (r *Reconciler) deleteServer(ctx context.Context, m *clusterv1.Machine) error {
	before := m.DeepCopy()
	if controlplane.ReleaseServerForRestore(m) {
		if err := r.Client.Patch(ctx, m, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("releasing Machine %s for deletion: %w", m.Name, err)
		}
	}
	if !m.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := r.Client.Delete(ctx, m); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting Machine %s: %w", m.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Deleted an old server for the restore", "Machine", m.Name)
	return nil
}

// ownByCluster makes the Cluster own the restore and labels it with the Cluster's
// name, so that the restore goes with its Cluster: deleted with it, moved with it by
// clusterctl move, listed with its other objects.
func (r *Reconciler) ownByCluster(ctx context.Context, restore *controlplanev1.KThreesEtcdRestore, cluster *clusterv1.Cluster) error {
	if cluster == nil {
		return nil
	}
	before := restore.DeepCopy()
	if restore.Labels == nil {
		restore.Labels = map[string]string{}
	}
	restore.Labels[clusterv1.ClusterNameLabel] = cluster.Name
	restore.OwnerReferences = util.EnsureOwnerRef(restore.OwnerReferences, metav1.OwnerReference{
		APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cluster.Name, UID: cluster.UID,
	})
	if equality.Semantic.DeepEqual(before.ObjectMeta, restore.ObjectMeta) {
		return nil
	}
	if err := r.Client.Patch(ctx, restore, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("making Cluster %s the restore's owner: %w", cluster.Name, err)
	}
	return nil
}
