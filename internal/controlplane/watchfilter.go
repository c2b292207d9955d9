package controlplane

import (
	"sigs.k8s.io/cluster-api/util/labels"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// handles says whether this manager reconciles kcp: with --watch-filter, only a
// control plane labelled with its value. The controller's watches pass only labelled
// objects, but the Secret cache's events are not filtered (a Secret of capk3s's own
// carries no watch label) and map any cluster's Secret to its control plane: without
// this check, one shard would act on another's control planes.
func (r *Reconciler) handles(kcp *controlplanev1.KThreesControlPlane) bool {
	return r.WatchFilterValue == "" || labels.HasWatchLabel(kcp, r.WatchFilterValue)
}
