package k3smodel

import (
	"fmt"
	"regexp"
	"strconv"
)

// Minor is a k3s minor release the model knows, and the upstream k3s commit its rules
// were read from (the newest release of that minor whose source was read).
type Minor struct {
	// Number is the Kubernetes minor: 34 for v1.34.
	Number int
	// Read is the k3s release whose source the rules were read from.
	Read string
	// Commit is that release's upstream k3s commit ("Update to v1.34.9").
	Commit string
}

// Minors are the k3s minors the simulator plays, oldest first. A machine asking for
// another minor is refused: the simulator cannot say what that k3s would do.
var Minors = []Minor{
	{Number: 34, Read: "v1.34.9+k3s1", Commit: "0b241dca61a0d0f187988b394d9c1e560d6f6d64"},
	{Number: 35, Read: "v1.35.4+k3s1", Commit: "595cf680cf4c5d8ebb18ad7959f6d2fae04fa91c"},
	{Number: 36, Read: "v1.36.2+k3s1", Commit: "25e8ee776429004210a63446fd639b859fc17092"},
}

// Release is a k3s release as the install script's INSTALL_K3S_VERSION names it.
type Release struct {
	Minor, Patch int
	// Build is N of "+k3sN" (1 when absent).
	Build int
}

// releasePattern is a k3s release name: v1.<minor>.<patch>, an optional pre-release,
// an optional +k3sN. Written here, not taken from the product, on purpose.
var releasePattern = regexp.MustCompile(`^v?1\.([0-9]+)\.([0-9]+)(?:-[0-9A-Za-z.-]+)?(?:\+k3s([0-9]+))?$`)

// ParseRelease reads a k3s release name.
func ParseRelease(s string) (Release, error) {
	m := releasePattern.FindStringSubmatch(s)
	if m == nil {
		return Release{}, fmt.Errorf("%q is not a k3s release name", s)
	}
	r := Release{Build: 1}
	r.Minor, _ = strconv.Atoi(m[1])
	r.Patch, _ = strconv.Atoi(m[2])
	if m[3] != "" {
		r.Build, _ = strconv.Atoi(m[3])
	}
	return r, nil
}

// AtLeast says whether r is minor.patch or a later release of the same or a later
// minor. Rules that changed inside a minor's patch releases use it.
func (r Release) AtLeast(minor, patch int) bool {
	if r.Minor != minor {
		return r.Minor > minor
	}
	return r.Patch >= patch
}

// Known returns the Minor r belongs to, or an error naming the minors the simulator
// plays.
func (r Release) Known() (Minor, error) {
	for _, m := range Minors {
		if m.Number == r.Minor {
			return m, nil
		}
	}
	return Minor{}, fmt.Errorf("k3s v1.%d is not a minor the simulator plays (it plays v1.%d to v1.%d)", r.Minor, Minors[0].Number, Minors[len(Minors)-1].Number)
}
