package k3smodel

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// k3s's certificate monitor, read from pkg/certmonitor/certmonitor.go (identical in
// v1.34.9, v1.35.4 and v1.36.2), pkg/util/cert.go (GetCertStatus) and pkg/util/api.go
// (BuildControllerEventRecorder):
//   - every node (server and agent) runs it; it checks once the API server is up, at
//     once and then every 30 minutes (wait.Until with certCheckInterval);
//   - it records Events with a client-go event recorder writing to namespace
//     "default", source component "k3s-cert-monitor", source host the node name, on
//     the object reference {Kind: Node, Name: <node>, UID: <node>};
//   - every certificate in every file of the node's services is checked against
//     now + 120 days (the CA certificates that follow a leaf in its file included);
//     any finding gives one Warning Event, reason CertificateExpirationWarning, whose
//     message is the fixed lead then the findings joined by newlines (errors.Join);
//   - on servers, the CA files are checked against now + 365 days: Warning
//     CACertificateExpirationWarning, likewise;
//   - at the first check after a k3s start only, when neither warning was recorded,
//     Normal CertificateExpirationOK.
//
// k3s walks its service map in Go's random order, so the order of findings between
// services varies from check to check on a real node; the model sorts them by
// service so that its messages are stable. A reader must not depend on the order.

// The monitor's Event reasons, source and period.
const (
	CertificateExpirationWarning   = "CertificateExpirationWarning"
	CACertificateExpirationWarning = "CACertificateExpirationWarning"
	CertificateExpirationOK        = "CertificateExpirationOK"
	CertMonitorComponent           = "k3s-cert-monitor"
	CertMonitorNamespace           = "default"
	CertMonitorPeriod              = 30 * time.Minute
)

// The Event types the monitor uses (corev1.EventTypeWarning / Normal).
const (
	EventWarning = "Warning"
	EventNormal  = "Normal"
)

const (
	nodeLead = "Node certificates require attention - restart k3s on this node to trigger automatic rotation: "
	caLead   = "Certificate Authority certificates require attention - check k3s documentation and begin planning rotation: "
	okText   = "Node and Certificate Authority certificates managed by k3s are OK"
)

// CertEvent is one Event the monitor records.
type CertEvent struct {
	Type, Reason, Message string
}

// CertCheck is one run of the monitor on a node. CAs are the cluster's CAs; on an
// agent they appear only inside the leaf files.
type CertCheck struct {
	Server bool
	Leaves []Leaf
	CAs    map[CAName]CA
	Now    time.Time
	// First is the first check since k3s started.
	First bool
}

// Events are the Events the check records, warnings first.
func (c CertCheck) Events() []CertEvent {
	var out []CertEvent
	if lines := c.leafFindings(); len(lines) > 0 {
		out = append(out, CertEvent{EventWarning, CertificateExpirationWarning, nodeLead + strings.Join(lines, "\n")})
	}
	if lines := c.caFindings(); len(lines) > 0 {
		out = append(out, CertEvent{EventWarning, CACertificateExpirationWarning, caLead + strings.Join(lines, "\n")})
	}
	if c.First && len(out) == 0 {
		out = append(out, CertEvent{EventNormal, CertificateExpirationOK, okText})
	}
	return out
}

func (c CertCheck) leafFindings() []string {
	leaves := slices.Clone(c.Leaves)
	// Stable by service; files keep k3s's order inside a service.
	slices.SortStableFunc(leaves, func(a, b Leaf) int { return cmp.Compare(a.Service, b.Service) })
	var lines []string
	for _, l := range leaves {
		file := l.Service + "/" + path.Base(l.Path)
		lines = appendFinding(lines, file, l.Subject.String(), l.NotBefore, l.NotAfter, c.Now, CertificateRenewDays)
		if ca, ok := c.CAs[l.CA]; ok {
			lines = appendFinding(lines, file, ca.Subject.String(), ca.NotBefore, ca.NotAfter, c.Now, CertificateRenewDays)
		}
	}
	return lines
}

func (c CertCheck) caFindings() []string {
	if !c.Server {
		return nil
	}
	var lines []string
	for _, f := range CAFiles {
		if ca, ok := c.CAs[f.CA]; ok {
			lines = appendFinding(lines, "certificate-authority/"+path.Base(f.Path), ca.Subject.String(), ca.NotBefore, ca.NotAfter, c.Now, CAWarningDays)
		}
	}
	return lines
}

// appendFinding adds GetCertStatus's finding for one certificate, if any, in
// certmonitor.go's words.
func appendFinding(lines []string, file, subj string, notBefore, notAfter, now time.Time, days int) []string {
	warn := now.Add(time.Duration(days) * 24 * time.Hour)
	switch {
	case now.Before(notBefore):
		return append(lines, fmt.Sprintf("%s: certificate %s is not valid before %s", file, subj, notBefore.UTC().Format(time.RFC3339)))
	case now.After(notAfter):
		return append(lines, fmt.Sprintf("%s: certificate %s expired at %s", file, subj, notAfter.UTC().Format(time.RFC3339)))
	case warn.After(notAfter):
		return append(lines, fmt.Sprintf("%s: certificate %s will expire within %d days at %s", file, subj, days, notAfter.UTC().Format(time.RFC3339)))
	}
	return lines
}
