package certexpiry

import (
	"sort"
	"time"
)

// Summary is what a set of nodes' decisions say together.
type Summary struct {
	// Soonest is the node whose leaf certificate expires first among those in the
	// window ("" when none is), Expiry that date and Certificate its file.
	Soonest     string
	Expiry      time.Time
	Certificate string
	// Expired are the nodes whose soonest leaf certificate has expired at now, Expiring
	// the other nodes in the window, Unknown those with no readable report. Sorted.
	Expired, Expiring, Unknown []string
	// CANode is the node that reported the soonest CA expiry ("" when none did),
	// CAExpiry that date, CA the file it was listed under and CASubject its subject.
	CANode    string
	CAExpiry  time.Time
	CA        string
	CASubject string
}

// Summarize puts the nodes' decisions together. now is the management cluster's
// clock: whether a certificate has expired is judged by it, from the date the
// certificate carries, not from the words the node chose by its own clock (which may
// be off). Ties go to the node whose name sorts first, so that the result is stable.
func Summarize(nodes map[string]Node, now time.Time) Summary {
	names := make([]string, 0, len(nodes))
	for name := range nodes {
		names = append(names, name)
	}
	sort.Strings(names)
	var s Summary
	for _, name := range names {
		n := nodes[name]
		switch n.State {
		case InWindow:
			if !n.Expiry.After(now) {
				s.Expired = append(s.Expired, name)
			} else {
				s.Expiring = append(s.Expiring, name)
			}
			if s.Soonest == "" || n.Expiry.Before(s.Expiry) {
				s.Soonest, s.Expiry, s.Certificate = name, n.Expiry, n.Certificate
			}
		case Unknown:
			s.Unknown = append(s.Unknown, name)
		}
		if !n.CAExpiry.IsZero() && (s.CANode == "" || n.CAExpiry.Before(s.CAExpiry)) {
			s.CANode, s.CAExpiry, s.CA, s.CASubject = name, n.CAExpiry, n.CA, n.CASubject
		}
	}
	return s
}
