package etcdsnapshot

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s/supervisor"
)

// +kubebuilder:rbac:groups=controlplane.cluster.x-k8s.io,resources=kthreesetcdsnapshots;kthreesetcdsnapshots/status,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=controlplane.cluster.x-k8s.io,resources=kthreescontrolplanes,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// Defaults of the Reconciler's timeouts.
const (
	// DefaultResultTimeout: a request outlives the client's own timeout by a margin.
	DefaultResultTimeout = supervisor.DefaultTimeout + time.Minute
	// DefaultUnreachableTimeout: how long a Pending snapshot retries reaching k3s.
	DefaultUnreachableTimeout = 10 * time.Minute
	// retryInterval paces the retries of an unreachable supervisor and the reads of
	// k3s's records while a result is awaited (they live in the workload cluster,
	// which no watch of this controller sees).
	retryInterval = 10 * time.Second
)

// Reconciler takes each KThreesEtcdSnapshot once.
type Reconciler struct {
	Client client.Client
	// APIReader reads the Secrets live: a snapshot is rare, and the manager's cache
	// holds no Secret data.
	APIReader client.Reader
	// Workload reads a workload cluster live (ClusterCache.GetUncachedClient).
	Workload func(ctx context.Context, cluster client.ObjectKey) (client.Reader, error)
	// Supervisor makes the supervisor client; tests replace the endpoint.
	Supervisor func(ctx context.Context, r client.Reader, cluster *clusterv1.Cluster) (*supervisor.Client, error)
	// ResultTimeout bounds how long a sent request's result is looked for.
	ResultTimeout time.Duration
	// UnreachableTimeout bounds how long, from the object's creation, a
	// supervisor that cannot be reached (or its credentials read) is retried.
	UnreachableTimeout time.Duration
	// WatchFilterValue is the manager's --watch-filter.
	WatchFilterValue string

	// inflight holds the requests sent and not yet read, off the workers.
	inflight flights
}

// LiveWorkloadReader reads workload clusters through the ClusterCache's uncached
// client: the records are read a few times per snapshot, not worth an informer.
func LiveWorkloadReader(cc clustercache.ClusterCache) func(context.Context, client.ObjectKey) (client.Reader, error) {
	return func(ctx context.Context, key client.ObjectKey) (client.Reader, error) {
		return cc.GetUncachedClient(ctx, key)
	}
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	if r.Workload == nil {
		return errors.New("the KThreesEtcdSnapshot controller needs a workload cluster reader")
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	// A request's answer wakes its snapshot; ctx ends with the manager.
	r.inflight.wake, r.inflight.stopped = make(chan event.GenericEvent), ctx.Done()
	return ctrl.NewControllerManagedBy(mgr).
		For(&controlplanev1.KThreesEtcdSnapshot{}).
		WatchesRawSource(source.Channel(r.inflight.wake, &handler.EnqueueRequestForObject{})).
		WithOptions(options).
		WithEventFilter(predicates.ResourceHasFilterLabel(mgr.GetScheme(), ctrl.LoggerFrom(ctx), r.WatchFilterValue)).
		Complete(r)
}

// Reconcile takes one step of one snapshot.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	s := &controlplanev1.KThreesEtcdSnapshot{}
	if err := r.Client.Get(ctx, req.NamespacedName, s); err != nil {
		if apierrors.IsNotFound(err) {
			r.inflight.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if finished(s) || !s.DeletionTimestamp.IsZero() {
		r.inflight.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	cluster := &clusterv1.Cluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Spec.ClusterName}, cluster); err != nil {
		if apierrors.IsNotFound(err) && s.Status.RequestedName == "" {
			return r.fail(ctx, s, controlplanev1.EtcdSnapshotClusterNotFoundReason, fmt.Sprintf("Cluster %s does not exist", s.Spec.ClusterName))
		}
		return ctrl.Result{}, err
	}
	if annotations.IsPaused(cluster, s) {
		return ctrl.Result{}, nil
	}
	if err := r.adopt(ctx, s, cluster); err != nil {
		return ctrl.Result{}, err
	}
	kcp, err := r.controlPlane(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if kcp == nil {
		return r.fail(ctx, s, controlplanev1.EtcdSnapshotClusterNotFoundReason, fmt.Sprintf("Cluster %s has no KThreesControlPlane", cluster.Name))
	}
	if s.Status.RequestedName != "" {
		if f := r.inflight.get(s); f != nil {
			return r.answered(ctx, s, cluster, kcp, f)
		}
		return r.resolve(ctx, s, cluster, kcp)
	}
	return r.request(ctx, s, cluster, kcp)
}

func finished(s *controlplanev1.KThreesEtcdSnapshot) bool {
	return s.Status.Phase == controlplanev1.EtcdSnapshotSucceeded || s.Status.Phase == controlplanev1.EtcdSnapshotFailed
}

// adopt makes the Cluster an owner (the snapshot goes with it) and sets the
// cluster-name label that CAPI's tooling selects by. A metadata write only.
func (r *Reconciler) adopt(ctx context.Context, s *controlplanev1.KThreesEtcdSnapshot, cluster *clusterv1.Cluster) error {
	owned := false
	for _, ref := range s.OwnerReferences {
		if ref.UID == cluster.UID {
			owned = true
		}
	}
	if owned && s.Labels[clusterv1.ClusterNameLabel] == cluster.Name {
		return nil
	}
	before := s.DeepCopy()
	if !owned {
		s.OwnerReferences = append(s.OwnerReferences, metav1.OwnerReference{
			APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cluster.Name, UID: cluster.UID,
		})
	}
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[clusterv1.ClusterNameLabel] = cluster.Name
	if err := r.Client.Patch(ctx, s, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("setting the Cluster as owner of KThreesEtcdSnapshot %s: %w", s.Name, err)
	}
	return nil
}

// controlPlane is the cluster's KThreesControlPlane, nil when it has another kind or none.
func (r *Reconciler) controlPlane(ctx context.Context, cluster *clusterv1.Cluster) (*controlplanev1.KThreesControlPlane, error) {
	name := controlplanev1.ControlPlaneName(cluster)
	if name == "" {
		return nil, nil
	}
	kcp := &controlplanev1.KThreesControlPlane{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: name}, kcp); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return kcp, nil
}

// refusal says why no snapshot can be taken of this control plane, "" when one can.
func refusal(s *controlplanev1.KThreesEtcdSnapshot, kcp *controlplanev1.KThreesControlPlane) (reason, message string) {
	switch {
	case kcp.Spec.KThreesConfigSpec.ServerConfig.Datastore != nil:
		return controlplanev1.EtcdSnapshotNotEmbeddedEtcdReason, "the control plane uses an external datastore (serverConfig.datastore): k3s has no embedded etcd to snapshot"
	case !ptr.Deref(kcp.Status.Initialization.ControlPlaneInitialized, false):
		return controlplanev1.EtcdSnapshotNotInitializedReason, "the control plane is not initialized: no server runs etcd yet"
	case s.Spec.Location == controlplanev1.EtcdSnapshotLocationS3 && s3Settings(kcp) == nil:
		return controlplanev1.EtcdSnapshotS3NotConfiguredReason, "location S3 needs kthreesConfigSpec.serverConfig.etcd.snapshots.s3 on the control plane"
	}
	return "", ""
}
