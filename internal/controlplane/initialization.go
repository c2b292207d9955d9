package controlplane

import (
	"context"
	"errors"

	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/workload"
)

// observeNodes reads the servers' nodes from the workload cluster, marks the control
// plane initialized once a server's node has registered (the API answered and k3s
// runs), and makes sure node changes wake this control plane. nil nodes, without an
// error, mean the workload cluster cannot be reached yet: the ClusterCache source
// wakes us when it can.
func (r *Reconciler) observeNodes(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, machines collections.Machines) (workload.Nodes, error) {
	if machines.Len() == 0 {
		return workload.Nodes{}, nil
	}
	key := client.ObjectKeyFromObject(cluster)
	if err := r.watchNodes(ctx, key, kcp); err != nil {
		if errors.Is(err, clustercache.ErrClusterNotConnected) {
			return nil, nil
		}
		return nil, err
	}
	nodes, err := workload.NodesOf(ctx, r.ClusterCache, key, machines)
	if err != nil {
		if errors.Is(err, workload.ErrNotConnected) {
			return nil, nil
		}
		return nil, err
	}
	if len(nodes) > 0 {
		// Initialization is a one-way milestone in the contract: never reset.
		kcp.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	}
	return nodes, nil
}
