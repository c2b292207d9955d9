package inplace

import (
	"fmt"

	"github.com/capk3s/capk3s/internal/k3s"
)

// versionStep says whether k3s on a running machine can go from cur to des by
// replacing its binary and restarting, and why not. Kubernetes' skew rules allow one
// minor release at a time, never backwards; a k3s build ("+k3s2") or patch release
// of the same minor is always fine.
func versionStep(cur, des string) (bool, string) {
	from, err := k3s.ParseVersion(cur)
	if err != nil {
		return false, fmt.Sprintf("current version: %v", err)
	}
	to, err := k3s.ParseVersion(des)
	if err != nil {
		return false, fmt.Sprintf("desired version: %v", err)
	}
	switch {
	case k3s.CompareVersions(to, from) < 0:
		return false, fmt.Sprintf("version %s to %s is a downgrade, which k3s does not support in place", cur, des)
	case to.Major != from.Major:
		return false, fmt.Sprintf("version %s to %s changes the major version", cur, des)
	case to.Minor > from.Minor+1:
		return false, fmt.Sprintf("version %s to %s skips a minor release; upgrade one minor release at a time", cur, des)
	}
	return true, ""
}
