package etcdrestore

import (
	"context"
	"errors"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/controlplane/restoreplan"
)

// oldAPIPoll is how often a restore holding its first server looks again whether
// Cluster API dropped its connections to the old workload API: nothing this
// controller watches changes when it does.
const oldAPIPoll = 5 * time.Second

// oldAPI reads what is known of the managers' connections to the old workload API:
// Cluster API's RemoteConnectionProbe on the Cluster (written by CAPI core, whose
// ClusterCache the Machine controller reads Nodes through) and this manager's own
// ClusterCache.
func (r *Reconciler) oldAPI(ctx context.Context, cluster *clusterv1.Cluster, now time.Time) restoreplan.OldAPI {
	o := restoreplan.OldAPI{Now: now}
	if c := conditions.Get(cluster, clusterv1.ClusterRemoteConnectionProbeCondition); c != nil {
		o.Probe, o.ProbeSince = c.Status, c.LastTransitionTime.Time
	}
	if r.ClusterCache != nil {
		_, err := r.ClusterCache.GetReader(ctx, client.ObjectKeyFromObject(cluster))
		o.CacheConnected = !errors.Is(err, clustercache.ErrClusterNotConnected)
	}
	return o
}
