package cloudinit

import (
	"fmt"
	"regexp"
	"strings"
)

// k3sVersion is stricter than the API's pattern because the version ends up in a
// shell command line; quoting protects the shell, this protects the install script
// from values it would turn into a nonsense download URL.
var k3sVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+k3s[0-9]+)?$`)

// normalizeVersion adds the "v" that k3s release tags carry and Machine versions
// often lack.
func normalizeVersion(v string) (string, error) {
	if v == "" {
		return "", fmt.Errorf("version is required")
	}
	if !strings.HasPrefix(v, "v") {
		v = "v" + v
	}
	if !k3sVersion.MatchString(v) {
		return "", fmt.Errorf("version %q is not a k3s version such as v1.35.4+k3s1", v)
	}
	return v, nil
}
