package bootstrap

import (
	"context"

	"sigs.k8s.io/cluster-api/util/labels"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// inShard keeps the requests for configs this manager handles: with --watch-filter,
// configs labelled with its value, the ones the KThreesConfig watch passes. Secret
// events reach the controller unfiltered (see SetupWithManager) and map to any
// cluster's configs; this keeps another shard's out.
func (r *Reconciler) inShard(ctx context.Context, reqs []reconcile.Request) []reconcile.Request {
	if r.WatchFilterValue == "" {
		return reqs
	}
	var out []reconcile.Request
	for _, req := range reqs {
		config := &bootstrapv1.KThreesConfig{}
		if err := r.Client.Get(ctx, req.NamespacedName, config); err == nil && labels.HasWatchLabel(config, r.WatchFilterValue) {
			out = append(out, req)
		}
	}
	return out
}
