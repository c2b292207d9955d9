package chaos

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// report logs the summary and fails the test on every problem a checker found.
func report(t *testing.T, checkers []checker, results []roundResult) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "chaos summary (seed %d):\n", seed())
	for i, r := range results {
		fmt.Fprintf(&b, "  round %d: %s; converged %s after; leader takeovers %s\n",
			i+1, r.faults(), r.converge.Round(time.Millisecond), spread(r.takeovers))
	}
	for _, c := range checkers {
		n, problems := c.counts()
		fmt.Fprintf(&b, "  %-38s %7d checks, %d problems\n", c.name(), n, len(problems))
	}
	t.Log(b.String())
	for _, c := range checkers {
		_, problems := c.counts()
		for _, p := range problems {
			t.Errorf("%s: %s", c.name(), p)
		}
	}
	for i, r := range results {
		for _, d := range r.takeovers {
			if d > maxTakeover {
				t.Errorf("round %d: a replica took over %s after its leader was killed, more than %s", i+1, d.Round(time.Millisecond), maxTakeover)
			}
		}
	}
}

// spread is "n, min/median/max" of durations.
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none clean"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }
	return fmt.Sprintf("%d clean, %s/%s/%s min/median/max", len(s), r(s[0]), r(s[len(s)/2]), r(s[len(s)-1]))
}

// faults describes a round's faults.
func (r roundResult) faults() string {
	return fmt.Sprintf("%d kills (%d in bursts, %d at the etcd hook, %d of a leader alone), %d apiserver restarts",
		r.kills, r.burst, r.hook, r.solo, r.restarts)
}
