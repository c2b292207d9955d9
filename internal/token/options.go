package token

import (
	"context"
	"fmt"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// Option tunes Reconcile.
type Option func(*options)

type options struct {
	live client.Reader
}

// WithLiveReader makes Reconcile confirm through r, an uncached reader such as the
// manager's API reader, that the cluster is not initialized before it generates a new
// token. Controllers read the control plane from a cache that may lag behind; a lagging
// copy must not let a token lost right after initialization be replaced.
func WithLiveReader(r client.Reader) Option {
	return func(o *options) { o.live = r }
}

// initialized reports whether the cluster is initialized, from the given objects and,
// when they say no and a live reader is set, from the apiserver itself.
func (o options) initialized(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane) (bool, error) {
	if initialized(cluster, kcp) || o.live == nil {
		return initialized(cluster, kcp), nil
	}
	liveCluster := &clusterv1.Cluster{}
	if err := o.live.Get(ctx, client.ObjectKeyFromObject(cluster), liveCluster); err != nil {
		return false, fmt.Errorf("confirming the Cluster is not initialized: %w", err)
	}
	liveKCP := &controlplanev1.KThreesControlPlane{}
	if err := o.live.Get(ctx, client.ObjectKeyFromObject(kcp), liveKCP); err != nil {
		return false, fmt.Errorf("confirming the control plane is not initialized: %w", err)
	}
	return initialized(liveCluster, liveKCP), nil
}
