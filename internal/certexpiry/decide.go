package certexpiry

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// Event is one certificate-monitor Event about a node.
type Event struct {
	Reason  string
	Message string
	// Time is when the node last recorded it, by the node's own clock (the Event's
	// lastTimestamp, which every repeat refreshes).
	Time time.Time
	// ResourceVersion orders the Events by their last write on the workload cluster's
	// API server, whatever the node's clock says (it may have been corrected between a
	// warning and a restart). Where two cannot be compared, Time decides.
	ResourceVersion string
	// Written is how the Event was written, for Authentic.
	Written Written
}

// State is what a node's latest check says of its leaf certificates.
type State string

const (
	// Unknown means no check of the node is known, or its report could not be read.
	Unknown State = "Unknown"
	// InWindow means a leaf certificate expires within RenewDays of the check, or has
	// expired; Node.Expiry is the soonest.
	InWindow State = "InWindow"
	// Clear means the latest check found no leaf certificate within RenewDays. k3s says no
	// more: the soonest expiry is only known to be later than Node.LaterThan.
	Clear State = "Clear"
)

// sameCheck is how far apart, by the node's clock, the Events of one check may be:
// a check records its leaf and its CA warning moments apart, and Event times have
// whole seconds. Checks are 30 minutes apart.
const sameCheck = 2 * time.Second

// Node is the decision for one node.
type Node struct {
	State State
	// Expiry is the soonest NotAfter of a leaf certificate in the latest check (InWindow).
	Expiry time.Time
	// Certificate is that certificate's file, as k3s names it.
	Certificate string
	// CheckedAt is the latest check's time by the node's clock (zero when Unknown
	// for want of any Event).
	CheckedAt time.Time
	// CAExpiry is the soonest NotAfter of a CA the latest check warned about (zero
	// when none), in its CA warning or inside a leaf file (KnownCAs.IsCA); CA is the
	// file it was listed under, CASubject its subject.
	CAExpiry  time.Time
	CA        string
	CASubject string
	// NotYetValid are the certificates the node found not valid yet: its clock is
	// behind the one that issued them.
	NotYetValid []string
}

// LaterThan is, for a Clear node, the date its soonest leaf certificate is known to
// expire after: the check's time plus RenewDays.
func (n Node) LaterThan() time.Time {
	if n.CheckedAt.IsZero() {
		return time.Time{}
	}
	return n.CheckedAt.Add(RenewDays * 24 * time.Hour)
}

// Decide reads a node's certificate-monitor Events (those Accept kept). The latest
// check wins: an OK (k3s restarted and renewed) or a check without a leaf warning
// supersedes an older warning, and a warning after an OK supersedes the OK. Events of
// other reasons are ignored. A CA listed under a leaf file (cas.IsCA) counts as a CA,
// never as the leaf: a restart does not renew it. Nothing here compares with the
// management cluster's clock.
func Decide(events []Event, cas KnownCAs) Node {
	var known []Event
	for _, e := range events {
		switch e.Reason {
		case ReasonLeafWarning, ReasonCAWarning, ReasonOK:
			known = append(known, e)
		}
	}
	if len(known) == 0 {
		return Node{State: Unknown}
	}
	latest := known[0]
	for _, e := range known[1:] {
		if later(e, latest) {
			latest = e
		}
	}
	n := Node{State: Clear, CheckedAt: latest.Time}
	if latest.Reason == ReasonOK {
		// k3s records OK only when the check found nothing to warn about, leaf or CA:
		// an OK is a check of its own, never grouped with warnings however close in
		// time (a k3s restarted at once reports within seconds of its last warning).
		return n
	}
	leafWarned, unread := false, 0
	considerCA := func(c Certificate) {
		if c.Status != NotYetValid && (n.CAExpiry.IsZero() || c.Date.Before(n.CAExpiry)) {
			n.CAExpiry, n.CA, n.CASubject = c.Date, c.File, c.Subject
		}
	}
	for _, e := range known {
		if d := e.Time.Sub(latest.Time); d > sameCheck || d < -sameCheck {
			continue
		}
		switch e.Reason {
		case ReasonLeafWarning:
			leafWarned = true
			certs, u := parseMessage(e.Message)
			unread += u
			for _, c := range certs {
				switch {
				case c.Status == NotYetValid:
					n.NotYetValid = append(n.NotYetValid, c.File)
				case cas.IsCA(c):
					considerCA(c)
				case n.Expiry.IsZero() || c.Date.Before(n.Expiry):
					n.Expiry, n.Certificate = c.Date, c.File
				}
			}
		case ReasonCAWarning:
			for _, c := range ParseMessage(e.Message) {
				considerCA(c)
			}
		}
	}
	switch {
	case !n.Expiry.IsZero():
		n.State = InWindow
	case leafWarned && (unread > 0 || len(n.NotYetValid) > 0):
		// k3s warned, but of nothing this reads as a leaf's expiry: a certificate
		// not valid yet (its expiry was not checked), or words a later k3s changed.
		// A warning that lists only CAs says every leaf is beyond the window: Clear.
		n.State = Unknown
	}
	sort.Strings(n.NotYetValid)
	return n
}

// later says a was recorded after b. Ties (the same resourceVersion cannot happen;
// the same second can) go to the warning: wrongly keeping a warning costs an early
// renewal, wrongly dropping one costs an outage.
func later(a, b Event) bool {
	if c, err := resourceversion.CompareResourceVersion(a.ResourceVersion, b.ResourceVersion); err == nil && c != 0 {
		return c > 0
	}
	if !a.Time.Equal(b.Time) {
		return a.Time.After(b.Time)
	}
	return rank(a.Reason) > rank(b.Reason)
}

func rank(reason string) int {
	switch reason {
	case ReasonLeafWarning:
		return 2
	case ReasonCAWarning:
		return 1
	}
	return 0
}

// AnnotationValue is what a Machine's certificates-expiry annotation
// (clusterv1.MachineCertificatesExpiryDateAnnotation) should hold after its node's
// decision: value (RFC3339, UTC), or nothing (value ""), unless keep says to leave
// whatever it holds. running says the node's k3s runs (its Node is Ready).
//
// A node in the window gets its soonest date. A Clear node gets none: k3s said its
// certificates expire later than the window, and no date is invented. A running node
// without a single certificate-monitor Event gets none either: k3s repeats a
// warning every 30 minutes, which keeps it alive past the 1-hour event TTL, so a
// running k3s that warns is never without one (this assumes the workload API server's
// --event-ttl is not below 30 minutes; k3s's default is 1 hour). Otherwise (a node
// not running, a warning not readable) the last date stays: nothing new is known.
func AnnotationValue(n Node, running bool) (value string, keep bool) {
	switch {
	case n.State == InWindow:
		return n.Expiry.UTC().Format(time.RFC3339), false
	case n.State == Clear:
		return "", false
	case n.CheckedAt.IsZero() && running:
		return "", false
	}
	return "", true
}
