package k3s

import (
	"cmp"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
)

// versionPattern is what may reach the install script's INSTALL_K3S_VERSION: a
// Kubernetes release, an optional pre-release and an optional "+k3sN" build. Anything
// else is refused, also because the value ends up in a shell command.
var versionPattern = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+k3s[0-9]+)?$`)

// NormalizeVersion returns a k3s version with the leading "v" k3s release names have:
// "1.31.4+k3s1" and "v1.31.4+k3s1" are the same release.
func NormalizeVersion(v string) string {
	v = strings.TrimSpace(v)
	if v != "" && !strings.HasPrefix(v, "v") {
		v = "v" + v
	}
	return v
}

// ParseVersion checks that v names a k3s release and returns it as a semantic version,
// so that versions are compared by value, never as strings.
func ParseVersion(v string) (semver.Version, error) {
	n := NormalizeVersion(v)
	if !versionPattern.MatchString(n) {
		return semver.Version{}, fmt.Errorf("%q is not a k3s version (expected e.g. v1.31.4+k3s1)", v)
	}
	parsed, err := semver.ParseTolerant(n)
	if err != nil {
		return semver.Version{}, fmt.Errorf("%q is not a k3s version: %w", v, err)
	}
	return parsed, nil
}

// CompareVersions orders two k3s releases: by their Kubernetes version, then by the
// k3s build ("+k3s2" is newer than "+k3s1"). Semantic versioning ignores build
// metadata, and CAPI's build-tag comparison cannot order non-numeric tags, so k3s's
// own numbering is read here. It returns -1, 0 or 1.
func CompareVersions(a, b semver.Version) int {
	if c := a.Compare(b); c != 0 {
		return c
	}
	return cmp.Compare(buildNumber(a), buildNumber(b))
}

// buildNumber is N of a "+k3sN" build, 0 without one.
func buildNumber(v semver.Version) int {
	for _, b := range v.Build {
		if n, ok := strings.CutPrefix(b, "k3s"); ok {
			if i, err := strconv.Atoi(n); err == nil {
				return i
			}
		}
	}
	return 0
}
