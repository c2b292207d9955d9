package etcdrestore

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/controlplane/restoreplan"
	"github.com/capk3s/capk3s/internal/k3s"
)

// workloadNodes reads the workload cluster's Nodes through this manager's
// ClusterCache, which is connected to the restored cluster by now (the first server
// waited for the old connection to go). Without a ClusterCache there is nothing to
// read and nothing is deleted.
func (r *Reconciler) workloadNodes(ctx context.Context, cluster *clusterv1.Cluster) ([]restoreplan.WorkloadNode, string) {
	if r.ClusterCache == nil {
		return nil, ""
	}
	reader, err := r.ClusterCache.GetReader(ctx, client.ObjectKeyFromObject(cluster))
	if err != nil {
		return nil, err.Error()
	}
	list := &corev1.NodeList{}
	if err := reader.List(ctx, list); err != nil {
		return nil, err.Error()
	}
	out := make([]restoreplan.WorkloadNode, 0, len(list.Items))
	for _, n := range list.Items {
		_, controlPlane := n.Labels[k3s.ControlPlaneRoleLabel]
		_, etcd := n.Labels[k3s.EtcdRoleLabel]
		out = append(out, restoreplan.WorkloadNode{Name: n.Name, UID: string(n.UID), Server: controlPlane || etcd})
	}
	return out, ""
}

// deleteNodes deletes the old servers' Nodes the snapshot brought back, each only if
// it is still the Node that was listed (same UID): one re-created under its name
// since is another server's.
func (r *Reconciler) deleteNodes(ctx context.Context, cluster *clusterv1.Cluster, nodes []restoreplan.WorkloadNode) error {
	if r.ClusterCache == nil {
		return nil
	}
	c, err := r.ClusterCache.GetClient(ctx, client.ObjectKeyFromObject(cluster))
	if err != nil {
		return fmt.Errorf("deleting the old servers' Nodes: %w", err)
	}
	var errs []error
	for _, n := range nodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}
		err := c.Delete(ctx, node, client.Preconditions{UID: ptr.To(types.UID(n.UID))})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case apierrors.IsConflict(err):
			// Not the Node listed: the next pass reads it again.
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("deleting the old server's Node %s: %w", n.Name, err))
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Deleted an old server's Node the snapshot brought back", "Node", n.Name)
	}
	return errors.Join(errs...)
}
