package controlplane

import (
	"context"
	"fmt"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

var kcpGroupKind = controlplanev1.GroupVersion.WithKind("KThreesControlPlane").GroupKind()

// controlPlaneMachines lists the cluster's control-plane Machines that belong to kcp,
// adopting first the ones that belong to nobody: a cluster taken over from other
// software keeps its servers instead of getting new ones.
func (r *Reconciler) controlPlaneMachines(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane) (collections.Machines, error) {
	list := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, list, client.InNamespace(cluster.Namespace),
		client.MatchingLabels{clusterv1.ClusterNameLabel: cluster.Name}, client.HasLabels{clusterv1.MachineControlPlaneLabel}); err != nil {
		return nil, fmt.Errorf("listing control plane Machines: %w", err)
	}
	all := collections.FromMachineList(list)
	for _, m := range all.Filter(collections.AdoptableControlPlaneMachines(cluster.Name)) {
		if err := r.adopt(ctx, kcp, m); err != nil {
			return nil, err
		}
	}
	return all.Filter(collections.OwnedMachines(kcp, kcpGroupKind)), nil
}

// adopt makes kcp the controller of an ownerless server Machine and gives it the
// control plane's name label.
func (r *Reconciler) adopt(ctx context.Context, kcp *controlplanev1.KThreesControlPlane, m *clusterv1.Machine) error {
	if !m.DeletionTimestamp.IsZero() {
		return nil
	}
	before := m.DeepCopy()
	if err := controllerutil.SetControllerReference(kcp, m, r.Client.Scheme()); err != nil {
		return fmt.Errorf("adopting Machine %s: %w", m.Name, err)
	}
	m.Labels[clusterv1.MachineControlPlaneNameLabel] = kcp.Name
	if err := r.Client.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adopting Machine %s: %w", m.Name, err)
	}
	return nil
}
