package controlplane

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/workload"
)

// etcdSnapshotsConfigured says the servers take snapshots the control plane reports
// on: serverConfig.etcd.snapshots is set, on the embedded etcd.
func etcdSnapshotsConfigured(kcp *controlplanev1.KThreesControlPlane) bool {
	sc := kcp.Spec.KThreesConfigSpec.ServerConfig
	return sc.Etcd != nil && sc.Etcd.Snapshots != nil && sc.Datastore == nil
}

// etcdSnapshots is what a pass saw of k3s's snapshots.
type etcdSnapshots struct {
	// read says the ETCDSnapshotFiles were listed (latest may still be nil: none).
	read   bool
	latest *workload.EtcdSnapshot
	// latestS3 is the newest record of a copy in S3; count and ready count all records.
	latestS3     *workload.EtcdSnapshot
	count, ready int32
}

// summarize reads all of k3s's records into what the status reports.
func summarize(all []workload.EtcdSnapshot) etcdSnapshots {
	out := etcdSnapshots{read: true}
	for i := range all {
		s := &all[i]
		out.count++
		if s.ReadyToUse {
			out.ready++
		}
		if out.latest == nil || workload.Newer(s, out.latest) {
			out.latest = s
		}
		if s.S3 && (out.latestS3 == nil || workload.Newer(s, out.latestS3)) {
			out.latestS3 = s
		}
	}
	return out
}

func lastSnapshotStatus(l *workload.EtcdSnapshot) *controlplanev1.LastEtcdSnapshotStatus {
	if l == nil {
		return nil
	}
	return &controlplanev1.LastEtcdSnapshotStatus{
		Name: l.Name, NodeName: l.NodeName, Location: l.Location, S3: l.S3,
		CreationTime: l.CreationTime, Size: l.Size, ReadyToUse: l.ReadyToUse,
	}
}

// observeEtcdSnapshots reads the newest snapshot k3s records on the workload
// cluster, through the ClusterCache's cached reader (one informer per cluster, no
// request per pass), and watches the records so that a new snapshot wakes the
// control plane. Only when snapshots are configured and the workload cluster was
// reached this pass. A failed read is logged and reported Unknown: it must not
// hold back scaling or remediation.
func (r *Reconciler) observeEtcdSnapshots(ctx context.Context, key client.ObjectKey, kcp *controlplanev1.KThreesControlPlane, seen *observed) {
	if !etcdSnapshotsConfigured(kcp) || seen.nodes == nil || seen.machines.Len() == 0 {
		return
	}
	if err := r.watchEtcdSnapshots(ctx, key, kcp); err != nil {
		// No ETCDSnapshotFile kind yet: k3s installs it; the next pass watches.
		if !meta.IsNoMatchError(err) && !errors.Is(err, clustercache.ErrClusterNotConnected) {
			ctrl.LoggerFrom(ctx).Error(err, "Watching the workload cluster's ETCDSnapshotFiles")
		}
	}
	reader, err := r.ClusterCache.GetReader(ctx, key)
	if err != nil {
		return
	}
	all, err := workload.EtcdSnapshots(ctx, reader)
	if err != nil {
		if !errors.Is(err, clustercache.ErrClusterNotConnected) {
			ctrl.LoggerFrom(ctx).Error(err, "Reading the workload cluster's etcd snapshots")
		}
		return
	}
	seen.snapshots = summarize(all)
}

// watchEtcdSnapshots wakes the control plane on every change of an ETCDSnapshotFile
// (k3s writes them only when a snapshot is taken, fails or is pruned).
func (r *Reconciler) watchEtcdSnapshots(ctx context.Context, key client.ObjectKey, kcp *controlplanev1.KThreesControlPlane) error {
	if r.controller == nil {
		return nil
	}
	kind := &unstructured.Unstructured{}
	kind.SetGroupVersionKind(workload.ETCDSnapshotFileKind)
	request := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(kcp)}
	return r.ClusterCache.Watch(ctx, key, clustercache.NewWatcher(clustercache.WatcherOptions{
		Name:    "kthreescontrolplane-watchEtcdSnapshots",
		Watcher: r.controller,
		Kind:    kind,
		EventHandler: handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
			return []reconcile.Request{request}
		}),
	}))
}

// setEtcdSnapshots sets status.lastEtcdSnapshot and EtcdSnapshotsAvailable while
// snapshots are configured, and removes both otherwise. A pass that could not read
// the records keeps the last snapshot it knew (it still exists as far as anyone
// knows) and says the condition is Unknown. The messages hold no relative times, so
// an idle pass writes nothing.
func setEtcdSnapshots(kcp *controlplanev1.KThreesControlPlane, seen observed) {
	if !etcdSnapshotsConfigured(kcp) {
		kcp.Status.LastEtcdSnapshot = nil
		kcp.Status.EtcdSnapshots = nil
		conditions.Delete(kcp, controlplanev1.EtcdSnapshotsAvailableCondition)
		return
	}
	if s := seen.snapshots; s.read {
		kcp.Status.EtcdSnapshots = &controlplanev1.EtcdSnapshotsSummary{Count: s.count, ReadyCount: s.ready, LastS3: lastSnapshotStatus(s.latestS3)}
	}
	c := metav1.Condition{Type: controlplanev1.EtcdSnapshotsAvailableCondition}
	s := seen.snapshots
	switch {
	case !s.read && seen.machines.Len() == 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, controlplanev1.EtcdNoSnapshotYetReason, "No server runs yet"
	case !s.read:
		c.Status, c.Reason = metav1.ConditionUnknown, controlplanev1.WorkloadClusterUnreachableReason
		c.Message = "The workload cluster's ETCDSnapshotFiles could not be read"
	case s.latest == nil:
		kcp.Status.LastEtcdSnapshot = nil
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, controlplanev1.EtcdNoSnapshotYetReason, "k3s reports no etcd snapshot yet"
	default:
		l := s.latest
		kcp.Status.LastEtcdSnapshot = lastSnapshotStatus(l)
		switch {
		case l.ReadyToUse:
			c.Status, c.Reason = metav1.ConditionTrue, controlplanev1.EtcdSnapshotAvailableReason
			c.Message = fmt.Sprintf("Snapshot %s of node %s is ready to use", l.Name, l.NodeName)
		case l.Error != "":
			c.Status, c.Reason = metav1.ConditionFalse, controlplanev1.EtcdSnapshotFailedReason
			c.Message = fmt.Sprintf("The newest snapshot %s of node %s failed: %s", l.Name, l.NodeName, l.Error)
		default:
			c.Status, c.Reason = metav1.ConditionFalse, controlplanev1.EtcdNoSnapshotYetReason
			c.Message = fmt.Sprintf("The newest snapshot %s of node %s is not ready to use yet", l.Name, l.NodeName)
		}
	}
	conditions.Set(kcp, c)
}
