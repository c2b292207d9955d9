package sim

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The annotations and label of k3s's etcd member controller (k3s pkg/etcd).
const (
	etcdRemoveAnnotation      = "etcd.k3s.cattle.io/remove"
	etcdRemovedNameAnnotation = "etcd.k3s.cattle.io/removed-node-name"
	etcdNodeNameAnnotation    = "etcd.k3s.cattle.io/node-name"
	etcdNodeAddressAnnotation = "etcd.k3s.cattle.io/node-address"
	etcdRoleLabel             = "node-role.kubernetes.io/etcd"
)

// etcdResync is how often every Node is looked at again, so that a removal whose
// answer failed to be written is retried, as k3s's controller requeues it.
const etcdResync = 5 * time.Second

// runEtcdController plays k3s's etcd member controller until ctx ends: a Node of an
// etcd member annotated etcd.k3s.cattle.io/remove=true has its member removed, and
// the removal is recorded on the Node with etcd.k3s.cattle.io/removed-node-name.
func runEtcdController(ctx context.Context, clientset kubernetes.Interface, c *workloadCluster) {
	log := ctrl.Log.WithName("sim-etcd").WithValues("cluster", c.key.String())
	factory := informers.NewSharedInformerFactory(clientset, etcdResync)
	handle := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok || n.Labels[etcdRoleLabel] != "true" || !strings.EqualFold(n.Annotations[etcdRemoveAnnotation], "true") ||
			n.Annotations[etcdRemovedNameAnnotation] != "" {
			return
		}
		name, removed, err := c.removeMember(n.Name)
		if err != nil || !removed {
			if err != nil {
				log.Error(err, "Removing etcd member", "node", n.Name)
			}
			return
		}
		after := n.DeepCopy()
		after.Annotations[etcdRemovedNameAnnotation] = name
		cl, _, err := c.ready()
		if err == nil {
			err = cl.Patch(ctx, after, client.MergeFrom(n))
		}
		if err != nil && !apierrors.IsNotFound(err) {
			log.Error(err, "Recording the etcd member's removal", "node", n.Name)
			return
		}
		log.Info("Removed etcd member", "node", n.Name, "member", name)
	}
	_, err := factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
	})
	if err != nil {
		log.Error(err, "Watching Nodes")
		return
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
}
