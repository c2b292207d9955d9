package bootstrap

import (
	"context"
	"strings"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// watchesControlPlanes says whether the API serves capk3s's control plane. The
// bootstrap provider may run without it (a cluster of another control plane, or
// tests of the bootstrap provider alone); a watch on a kind the API does not serve
// would stop the manager from starting.
func (r *Reconciler) watchesControlPlanes(mgr ctrl.Manager) bool {
	_, err := mgr.GetRESTMapper().RESTMapping(controlPlaneGVK.GroupKind(), controlPlaneGVK.Version)
	return err == nil
}

// registrationChanged passes control planes whose join URL may have changed: a
// config waiting for a registration server is woken when one is published.
func registrationChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			m1, a1, p1 := registrationOf(e.ObjectOld)
			m2, a2, p2 := registrationOf(e.ObjectNew)
			return m1 != m2 || a1 != a2 || p1 != p2
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// controlPlaneToConfigs wakes the waiting configs of the control plane's cluster,
// known by its owner reference (set by Cluster API) or, before that, its label.
func (r *Reconciler) controlPlaneToConfigs(ctx context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[clusterv1.ClusterNameLabel]
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == "Cluster" && strings.HasPrefix(ref.APIVersion, clusterv1.GroupVersion.Group+"/") {
			name = ref.Name
		}
	}
	if name == "" {
		return nil
	}
	return r.inShard(ctx, r.waitingConfigs(ctx, o.GetNamespace(), name))
}
