package renewalplan

import (
	"fmt"
	"sort"
	"strings"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// ReplaceInterval is the least time between two replacements of a control plane's
// servers for their certificates. The date that makes a server due comes from a
// report on the workload cluster, which an Event writer there can forge; this bounds
// what such a report can cause to one server replaced per interval. A cluster whose
// servers are all genuinely due is renewed one server a day, well inside the 7 to
// 110 days certificatesExpiryDays leaves.
const ReplaceInterval = 24 * time.Hour

// Replacement is the record of a control plane's last replacement of a server for
// its certificates (controlplanev1.CertificatesReplacementAnnotation).
type Replacement struct {
	Machine string
	At      time.Time
}

// ParseReplacement reads the record; ok is false when there is none or it does not
// parse (then none is assumed: a record the user broke holds nothing back).
func ParseReplacement(v string) (Replacement, bool) {
	at, name, found := strings.Cut(strings.TrimSpace(v), " ")
	t, err := time.Parse(time.RFC3339, at)
	if !found || err != nil || name == "" {
		return Replacement{}, false
	}
	return Replacement{Machine: name, At: t}, true
}

// String is the record as the annotation holds it.
func (r Replacement) String() string {
	return r.At.UTC().Format(time.RFC3339) + " " + r.Machine
}

// ReplaceAllowed decides which of the servers due for a replacement for their
// certificates (due) the rollout may replace now: the one the last record names,
// while it is still due (its replacement is under way); else, once ReplaceInterval
// has passed since the record, the soonest due, whose record is to be written first
// (write). next is when the next may go, when none may now.
func ReplaceAllowed(last Replacement, hasLast bool, due []*clusterv1.Machine, now time.Time) (allowed string, write bool, next time.Time) {
	if len(due) == 0 {
		return "", false, time.Time{}
	}
	for _, m := range due {
		if hasLast && m.Name == last.Machine {
			return m.Name, false, time.Time{}
		}
	}
	if hasLast && now.Before(last.At.Add(ReplaceInterval)) {
		return "", false, last.At.Add(ReplaceInterval)
	}
	sorted := append([]*clusterv1.Machine(nil), due...)
	sort.Slice(sorted, func(i, j int) bool {
		a, _ := CertificatesExpiry(sorted[i])
		b, _ := CertificatesExpiry(sorted[j])
		if !a.Equal(b) {
			return a.Before(b)
		}
		return sorted[i].Name < sorted[j].Name
	})
	return sorted[0].Name, true, time.Time{}
}

// HeldMessage says which due servers wait for the limit, or "".
func HeldMessage(due []*clusterv1.Machine, allowed string, next time.Time) string {
	var held []string
	for _, m := range due {
		if m.Name != allowed {
			held = append(held, m.Name)
		}
	}
	if len(held) == 0 {
		return ""
	}
	sort.Strings(held)
	when := fmt.Sprintf("the next no sooner than %s after %s's replacement started", ReplaceInterval, allowed)
	if allowed == "" {
		when = "the next not before " + next.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("servers are replaced for their certificates one per control plane every %s (%s can be removed to allow the next at once); %s wait: %s",
		ReplaceInterval, controlplanev1.CertificatesReplacementAnnotation, strings.Join(held, ", "), when)
}
