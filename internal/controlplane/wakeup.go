package controlplane

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// A pass ends with the soonest of the waits that no watch ends: a rollout deadline
// (rolloutAfter), a certificate coming due, a health check's timeout.

// soonest keeps the earlier of two time-based wake-ups (zero means none).
func soonest(result ctrl.Result, after time.Duration) ctrl.Result {
	if after > 0 && (result.RequeueAfter == 0 || after < result.RequeueAfter) {
		result.RequeueAfter = after
	}
	return result
}
