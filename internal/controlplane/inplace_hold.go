package controlplane

import (
	"context"
	"fmt"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/capk3s/capk3s/internal/controlplane/inplaceplan"
)

// inPlaceHold says whether the in-place updates under way (seen.updatingInPlace) hold
// the pass's scaling and rollout, and for how long at most (inplaceplan.Hold decides).
// The updates Cluster API has not started in time are logged and listed in
// seen.inPlaceNotStarted, for RollingOut; they hold only the rollout (nextStep).
func inPlaceHold(ctx context.Context, seen *observed, now time.Time) (hold bool, wait time.Duration) {
	updating := make([]*clusterv1.Machine, 0, len(seen.updatingInPlace))
	for _, name := range seen.updatingInPlace {
		updating = append(updating, seen.machines[name])
	}
	hold, wait, notStarted := inplaceplan.Hold(updating, now)
	for _, n := range notStarted {
		ctrl.LoggerFrom(ctx).Info("Cluster API has not started the in-place update of a server; scaling goes on without it",
			"Machine", n.Machine, "markedSince", n.Since.UTC().Format(time.RFC3339))
		seen.inPlaceNotStarted = append(seen.inPlaceNotStarted, fmt.Sprintf("%s (since %s)", n.Machine, n.Since.UTC().Format(time.RFC3339)))
	}
	return hold, wait
}
