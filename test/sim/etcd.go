package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// The annotations and label of k3s's etcd controllers, as the simulator's k3s model
// has them.
const (
	etcdNodeNameAnnotation    = k3smodel.EtcdNodeNameAnnotation
	etcdNodeAddressAnnotation = k3smodel.EtcdNodeAddressAnnotation
	etcdRoleLabel             = k3smodel.EtcdRoleLabel
)

// etcdResync is how often every Node is looked at again, so that a sync that failed
// is retried, as k3s's controller requeues it.
const etcdResync = 5 * time.Second

// errOnlyVoter is etcd refusing to remove its last voting member (k3s's RemovePeer
// gets rpctypes.ErrMemberNotEnoughStarted).
var errOnlyVoter = errors.New("etcd refuses to remove its only voting member")

// runEtcdController plays k3s's etcd member controller until ctx ends, for each Node
// as the k3s release its kubelet reports does (k3smodel.SyncMember).
func runEtcdController(ctx context.Context, clientset kubernetes.Interface, c *workloadCluster) {
	log := ctrl.Log.WithName("sim-etcd").WithValues("cluster", c.key.String())
	factory := informers.NewSharedInformerFactory(clientset, etcdResync)
	handle := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		after, err := c.syncEtcdMember(n)
		if err != nil {
			// k3s logs the failed sync and retries it, failing the same way for as
			// long as the Node stays so; the resync is the retry.
			log.Error(err, "k3s's etcd member controller failed to sync a Node", "node", n.Name)
			return
		}
		if after == nil {
			return
		}
		cl, _, err := c.ready()
		if err == nil {
			err = cl.Patch(ctx, after, client.MergeFrom(n))
		}
		if err != nil && !apierrors.IsNotFound(err) {
			log.Error(err, "Recording the etcd member controller's answer", "node", n.Name)
			return
		}
		log.Info("Synced an etcd member removal", "node", n.Name, "annotations", after.Annotations)
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

// syncEtcdMember is one sync of k3s's member controller on n: it removes the member
// the model says to, and returns the Node as k3s leaves it (nil: unchanged) or the
// error the sync fails with. The release is the one the Node's kubelet reports, as
// the simulator registers it from the install command (and SUC upgrades it).
func (c *workloadCluster) syncEtcdMember(n *corev1.Node) (*corev1.Node, error) {
	release, err := k3smodel.ParseRelease(n.Status.NodeInfo.KubeletVersion)
	if err == nil {
		_, err = release.Known()
	}
	if err != nil {
		return nil, fmt.Errorf("the simulator cannot play the etcd member controller of Node %s: %w", n.Name, err)
	}
	sync := release.SyncMember(n.Name, n.Labels, n.Annotations)
	switch {
	case sync.Err != nil:
		return nil, sync.Err
	case sync.Remove == "" && sync.Done == nil:
		return nil, nil
	}
	annotations := sync.Done
	if sync.Remove != "" {
		switch err := c.removeMemberNamed(sync.Remove); {
		case errors.Is(err, errOnlyVoter):
			annotations = sync.Rejected
		case err != nil:
			return nil, err
		}
	}
	if maps.Equal(annotations, n.Annotations) {
		return nil, nil
	}
	after := n.DeepCopy()
	after.Annotations = annotations
	return after, nil
}

// removeMemberNamed is etcd's member removal as k3s's RemovePeer asks for it: by the
// member's name. A name no member has is done already (k3s treats etcd's
// member-not-found as success); the only member is refused.
func (c *workloadCluster) removeMemberNamed(name string) error {
	c.mu.Lock()
	if c.quorumLost {
		c.mu.Unlock()
		return errQuorumLost
	}
	node := ""
	for n, m := range c.members {
		if m.name == name {
			node = n
		}
	}
	switch {
	case node == "":
		c.mu.Unlock()
		return nil
	case len(c.members) == 1:
		c.mu.Unlock()
		return errOnlyVoter
	}
	delete(c.members, node)
	c.removed[node] = name
	c.mu.Unlock()
	c.onChange(c.key)
	return nil
}
