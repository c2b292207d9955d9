package controlplane

import (
	"context"
	"fmt"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// reconcileDelete removes the servers once the cluster's workers are gone (they need
// the API to drain), then releases the finalizer. The Machine watch wakes us as
// machines disappear.
func (r *Reconciler) reconcileDelete(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, seen *observed) (ctrl.Result, error) {
	all := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, all, client.InNamespace(cluster.Namespace),
		client.MatchingLabels{clusterv1.ClusterNameLabel: cluster.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the cluster's Machines: %w", err)
	}
	machines := collections.FromMachineList(all)
	servers := machines.Filter(collections.OwnedMachines(kcp, kcpGroupKind))
	workers := machines.Filter(collections.Not(collections.ControlPlaneMachines(cluster.Name)))
	// A list without a server created a moment ago would release the finalizer while
	// that server still holds its etcd hook.
	if wait, err := r.waitForMachineCache(ctx, cluster, kcp, servers, seen); err != nil || wait.RequeueAfter > 0 {
		return wait, err
	}
	seen.machines = servers
	// Hooks are released at once when the control plane goes: there is nothing to hand over.
	if err := r.reconcileEtcdMembership(ctx, cluster, kcp, seen); err != nil {
		return ctrl.Result{}, err
	}

	if servers.Len() == 0 {
		controllerutil.RemoveFinalizer(kcp, controlplanev1.KThreesControlPlaneFinalizer)
		return ctrl.Result{}, nil
	}
	if workers.Len() > 0 {
		setTrueWhen(kcp, controlplanev1.DeletingCondition, true, controlplanev1.WaitingForWorkersDeletionReason, "",
			fmt.Sprintf("Waiting for %d worker Machines to be deleted before the servers", workers.Len()))
		return ctrl.Result{}, nil
	}
	setTrueWhen(kcp, controlplanev1.DeletingCondition, true, controlplanev1.DeletingReason, "",
		fmt.Sprintf("Deleting %d servers", servers.Len()))
	for _, m := range servers.Filter(collections.Not(collections.HasDeletionTimestamp)) {
		if err := r.deleteServer(ctx, kcp, m); err != nil {
			return ctrl.Result{}, fmt.Errorf("deleting Machine %s: %w", m.Name, err)
		}
	}
	ctrl.LoggerFrom(ctx).Info("Deleting control plane Machines", "count", servers.Len())
	return ctrl.Result{}, nil
}
