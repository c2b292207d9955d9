package controlplane

import (
	"context"
	"fmt"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/restoreplan"
)

// +kubebuilder:rbac:groups=controlplane.cluster.x-k8s.io,resources=kthreesetcdrestores,verbs=get;list;watch

// A KThreesEtcdRestore takes the servers over while it deletes the old ones and its
// first server restores the snapshot (restoreplan.Holds): then this controller still
// reports (secrets, status, each server's UpToDate) but takes no step on the servers
// and their etcd membership, which would fight the restore (a scale-up of the servers
// it deletes, an etcd hook it has dropped put back). Once the first server has
// restored, the restore lets go and this controller joins the other servers as in any
// scale-up.

// heldByRestore says whether a restore holds the cluster's servers; the scaling
// conditions then say which one (seen.blocked).
//
// A restore that failed after it deleted the servers still holds them while it
// holds the control plane's restore lock: the control plane would otherwise join
// servers to a cluster that has no working server.
func (r *Reconciler) heldByRestore(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, seen *observed) (bool, error) {
	restores := &controlplanev1.KThreesEtcdRestoreList{}
	if err := r.Client.List(ctx, restores, client.InNamespace(cluster.Namespace)); err != nil {
		return false, fmt.Errorf("listing KThreesEtcdRestores: %w", err)
	}
	name := restoreplan.HoldingRestore(restores.Items, cluster.Name, kcp.Annotations[controlplanev1.EtcdRestoreLockAnnotation])
	if name == "" {
		return false, nil
	}
	ctrl.LoggerFrom(ctx).V(2).Info("A restore holds the servers; only reporting", "KThreesEtcdRestore", name)
	seen.blocked = "held by KThreesEtcdRestore " + name + ", which replaces the servers"
	return true, nil
}

// restoreToControlPlane wakes the control plane of a restore's cluster: a restore that
// lets go of the servers is when the control plane joins the others.
func (r *Reconciler) restoreToControlPlane(ctx context.Context, o client.Object) []reconcile.Request {
	restore, ok := o.(*controlplanev1.KThreesEtcdRestore)
	if !ok {
		return nil
	}
	cluster := &clusterv1.Cluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: restore.Namespace, Name: restore.Spec.ClusterName}, cluster); err != nil {
		return nil
	}
	return clusterToControlPlane(ctx, cluster)
}
