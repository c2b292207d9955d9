package k3smodel

import (
	"errors"
	"strings"
)

// How the system-upgrade-controller (SUC, rancher/system-upgrade-controller, not
// k3s) resolves a Plan's version, read from pkg/upgrade/handle_upgrade.go (the Plan
// status handler) and pkg/apis/upgrade.cattle.io/v1 (types.go, errors):
//
//   - A Plan with neither spec.version nor spec.channel gets condition LatestResolved
//     False, reason "Error", message "cannot resolve plan: missing channel and
//     version", and SUC makes no Job for it (its generating handler waits for
//     LatestResolved True). It stays so until the spec changes: nothing else fails.
//   - spec.version wins over spec.channel; status.latestVersion is the version with
//     "+" replaced by "-" (pkg/upgrade/plan/plan.go, MungeVersion), since it becomes
//     an image tag. LatestResolved is then True, reason "Version".
//
// Read from the stored copy of SUC's main branch; the SUC release capk3s's tests
// install was not checked line by line against it.

// ErrPlanUnresolvable is SUC's message for a Plan with neither version nor channel.
var ErrPlanUnresolvable = errors.New("cannot resolve plan: missing channel and version")

// ResolvePlanVersion is SUC's status.latestVersion for a Plan spec, or
// ErrPlanUnresolvable. A channel is not followed: the simulator plays no channel
// server, so a Plan that names only a channel is an error here (SUC would ask the
// channel's URL).
func ResolvePlanVersion(version, channel string) (string, error) {
	switch {
	case version != "":
		return strings.ReplaceAll(version, "+", "-"), nil
	case channel != "":
		return "", errors.New("the simulator cannot resolve a channel")
	default:
		return "", ErrPlanUnresolvable
	}
}
