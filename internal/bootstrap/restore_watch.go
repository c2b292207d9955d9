package bootstrap

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// watchesEtcdRestores says whether the API serves KThreesEtcdRestore: the bootstrap
// provider may run without capk3s's control plane, and a watch on a kind the API does
// not serve would stop the manager from starting.
func (r *Reconciler) watchesEtcdRestores(mgr ctrl.Manager) bool {
	_, err := mgr.GetRESTMapper().RESTMapping(etcdRestoreGVK.GroupKind(), etcdRestoreGVK.Version)
	return err == nil
}

// restoreProgressed passes restores whose answer to restoreInProgress may have
// changed: created, or their phase, first server or snapshot changed.
func restoreProgressed() predicate.Funcs {
	progress := func(o client.Object) [3]string {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return [3]string{}
		}
		var out [3]string
		for i, f := range []string{"phase", "firstServer", "snapshotName"} {
			out[i], _, _ = unstructured.NestedString(u.Object, "status", f)
		}
		return out
	}
	return predicate.Funcs{
		UpdateFunc:  func(e event.UpdateEvent) bool { return progress(e.ObjectOld) != progress(e.ObjectNew) },
		CreateFunc:  func(event.CreateEvent) bool { return true },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// restoreToConfigs wakes the waiting configs of the restored cluster, the restore's
// first server among them.
func (r *Reconciler) restoreToConfigs(ctx context.Context, o client.Object) []reconcile.Request {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	cluster, _, _ := unstructured.NestedString(u.Object, "spec", "clusterName")
	if cluster == "" {
		return nil
	}
	return r.inShard(ctx, r.waitingConfigs(ctx, o.GetNamespace(), cluster))
}
