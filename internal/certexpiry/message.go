package certexpiry

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Event source and reasons k3s's certificate monitor uses (pkg/certmonitor/certmonitor.go).
const (
	// Source is the Events' source component: version.Program + "-cert-monitor".
	Source = "k3s-cert-monitor"
	// ReasonLeafWarning: a node or service certificate expires within RenewDays, or expired.
	ReasonLeafWarning = "CertificateExpirationWarning"
	// ReasonCAWarning: a CA certificate on the node expires within CAWarnDays.
	ReasonCAWarning = "CACertificateExpirationWarning"
	// ReasonOK: the first check after k3s started found nothing to warn about.
	ReasonOK = "CertificateExpirationOK"
)

// The fixed words k3s's certificate monitor puts before its findings, and the OK
// Event's whole message (pkg/certmonitor/certmonitor.go, version.Program "k3s").
const (
	LeafLead  = "Node certificates require attention - restart k3s on this node to trigger automatic rotation: "
	CALead    = "Certificate Authority certificates require attention - check k3s documentation and begin planning rotation: "
	OKMessage = "Node and Certificate Authority certificates managed by k3s are OK"
	// aggregatedLead is what client-go's event aggregator puts before the message of
	// an Event it combines from similar ones (tools/record/events_cache.go).
	aggregatedLead = "(combined from similar events): "
)

// RenewDays is k3s's CertificateRenewDays (pkg/daemons/config/types.go): the window in
// which the monitor warns about a leaf certificate and in which a restart renews it.
const RenewDays = 120

// CAWarnDays is the window of the monitor's CA warning (pkg/certmonitor/certmonitor.go).
const CAWarnDays = 365

// Status is what k3s said of one certificate.
type Status string

const (
	// Expiring is k3s's "will expire within N days at <date>".
	Expiring Status = "Expiring"
	// Expired is k3s's "expired at <date>".
	Expired Status = "Expired"
	// NotYetValid is k3s's "is not valid before <date>"; the date is NotBefore, not an expiry,
	// and usually means the node's clock is behind the clock that issued it.
	NotYetValid Status = "NotYetValid"
)

// Certificate is one line of a warning.
type Certificate struct {
	// File is "<service>/<file name>", as k3s names it (e.g. "kubelet/client-kubelet.crt").
	File    string
	Subject string
	Status  Status
	// Date is NotAfter (Expiring, Expired) or NotBefore (NotYetValid), in UTC.
	Date time.Time
}

// line matches one certificate of a warning. The subject may hold spaces and commas,
// so the line is read from its end; anything before the service (the Event's
// preamble, or the "(combined from similar events): " that client-go's aggregator
// puts in front) is skipped.
var line = regexp.MustCompile(`(\S+/\S+): certificate (.+) (will expire within (\d+) days at|expired at|is not valid before) (\S+)\s*$`)

// ParseMessage reads the certificates a warning's message lists. Lines it cannot read
// are left out: a later k3s may word them otherwise, and one odd line must not hide
// the others.
func ParseMessage(msg string) []Certificate {
	out, _ := parseMessage(msg)
	return out
}

// parseMessage is ParseMessage, also counting the lines it could not read.
func parseMessage(msg string) (out []Certificate, unread int) {
	for _, l := range strings.Split(msg, "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			unread++
			continue
		}
		date, err := time.Parse(time.RFC3339, m[5])
		if err != nil {
			unread++
			continue
		}
		c := Certificate{File: m[1], Subject: m[2], Date: date.UTC()}
		switch {
		case strings.HasPrefix(m[3], "will expire"):
			if _, err := strconv.Atoi(m[4]); err != nil {
				unread++
				continue
			}
			c.Status = Expiring
		case m[3] == "expired at":
			c.Status = Expired
		default:
			c.Status = NotYetValid
		}
		out = append(out, c)
	}
	return out, unread
}
