package k3s

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
)

// versionPattern is what may reach the install script's INSTALL_K3S_VERSION: a
// Kubernetes release, an optional pre-release and an optional "+k3sN" build. Anything
// else is refused, also because the value ends up in a shell command: it is stricter
// than the API's pattern, and where quoting protects the shell, this protects the
// install script from values it would turn into a nonsense download URL.
var versionPattern = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+k3s[0-9]+)?$`)

// WithLeadingV adds the "v" that k3s release names (v1.31.4+k3s1) and the install
// script carry and Machine versions often lack, to a non-empty v, and changes
// nothing else: "1.31.4+k3s1" and "v1.31.4+k3s1" are the same release. The
// KThreesConfig defaulting stores its version this way, as written otherwise.
func WithLeadingV(v string) string {
	if v == "" || strings.HasPrefix(v, "v") {
		return v
	}
	return "v" + v
}

// NormalizeVersion is WithLeadingV of v without surrounding whitespace: how the
// control plane stores, compares and hands on its version.
func NormalizeVersion(v string) string {
	return WithLeadingV(strings.TrimSpace(v))
}

// InstallVersion returns v with its leading "v", as the install script's
// INSTALL_K3S_VERSION: the value must then be a k3s release name exactly, with
// nothing trimmed, since it goes into the machine's bootstrap data as it is.
func InstallVersion(v string) (string, error) {
	if v == "" {
		return "", errors.New("version is required")
	}
	v = WithLeadingV(v)
	if !versionPattern.MatchString(v) {
		return "", fmt.Errorf("version %q is not a k3s version such as v1.35.4+k3s1", v)
	}
	return v, nil
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
