package controlplane

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
)

// watchNodes watches the workload cluster's Nodes for this control plane. ClusterCache
// keeps one watch per name and cluster, so calling it every pass is cheap.
//
// Every kubelet refreshes its Node's status every few minutes and on every change of
// its own, and agents are most of a fleet's Nodes: a pass for each of those events
// would cost a full pass (and its Secret reads) for nothing. serverNodeChanged lets
// through only what this controller reads from Nodes: a server Node appearing or
// going, its readiness, its etcd role and k3s's etcd member annotations, and its
// provider ID (which ties it to its Machine).
func (r *Reconciler) watchNodes(ctx context.Context, cluster client.ObjectKey, kcp *controlplanev1.KThreesControlPlane) error {
	if r.controller == nil {
		return nil
	}
	request := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(kcp)}
	return r.ClusterCache.Watch(ctx, cluster, clustercache.NewWatcher(clustercache.WatcherOptions{
		Name:    "kthreescontrolplane-watchNodes",
		Watcher: r.controller,
		Kind:    &corev1.Node{},
		EventHandler: handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
			return []reconcile.Request{request}
		}),
		Predicates: []predicate.Predicate{serverNodeChanged()},
	}))
}

// serverNodeChanged filters Node events down to those that can change a decision
// or a condition of the control plane.
func serverNodeChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return isServerNode(e.Object) },
		DeleteFunc: func(e event.DeleteEvent) bool { return isServerNode(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, okBefore := e.ObjectOld.(*corev1.Node)
			after, okAfter := e.ObjectNew.(*corev1.Node)
			if !okBefore || !okAfter {
				return true
			}
			if !isServerNode(before) && !isServerNode(after) {
				return false
			}
			return nodeReady(before) != nodeReady(after) ||
				before.Labels[k3s.ControlPlaneRoleLabel] != after.Labels[k3s.ControlPlaneRoleLabel] ||
				before.Labels[k3s.EtcdRoleLabel] != after.Labels[k3s.EtcdRoleLabel] ||
				before.Annotations[k3s.EtcdRemoveAnnotation] != after.Annotations[k3s.EtcdRemoveAnnotation] ||
				before.Annotations[k3s.EtcdRemovedNodeNameAnnotation] != after.Annotations[k3s.EtcdRemovedNodeNameAnnotation] ||
				before.Spec.ProviderID != after.Spec.ProviderID
		},
		GenericFunc: func(event.GenericEvent) bool { return true },
	}
}

// isServerNode says k3s labelled the Node as a server's (control plane or etcd).
func isServerNode(o client.Object) bool {
	labels := o.GetLabels()
	return labels[k3s.ControlPlaneRoleLabel] == "true" || labels[k3s.EtcdRoleLabel] == "true"
}

// nodeReady is the status of the Node's Ready condition ("" without one).
func nodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}
