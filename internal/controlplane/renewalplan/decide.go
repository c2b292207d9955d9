package renewalplan

import (
	"fmt"
	"sort"
	"strings"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// ReportGrace is how long after a completed restart the node's report of its
// certificates may still show the old expiry before the restart counts as having
// renewed nothing. k3s checks its certificates once its apiserver is up after a start
// (pkg/certmonitor, k3s v1.34-v1.36), so a renewed node reports within minutes.
const ReportGrace = time.Hour

// CertificatesExpiry is when a Machine's k3s certificates expire, as far as the
// management cluster knows: the Machine's certificates-expiry annotation (the source,
// and for agents the only record: CAPI's Machine controller copies it into
// status.certificatesExpiryDate for control-plane Machines only), else that status
// field. ok is false without either (no report yet: nothing is decided on it). An
// annotation that does not parse falls back to the status, as a report that cannot be
// read says nothing.
func CertificatesExpiry(m *clusterv1.Machine) (expiry time.Time, ok bool) {
	if v, found := m.Annotations[clusterv1.MachineCertificatesExpiryDateAnnotation]; found {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t, true
		}
	}
	if !m.Status.CertificatesExpiryDate.IsZero() {
		return m.Status.CertificatesExpiryDate.Time, true
	}
	return time.Time{}, false
}

// Due says whether m's certificates expire sooner than now + days, KCP's rule:
// an expiry exactly at the window's end is not due yet. days 0 (unset) renews nothing.
// An expiry already passed is due too: the management cluster's clock may be ahead
// of the node's, or the certificate has expired, and either way a restart renews it.
func Due(m *clusterv1.Machine, days int32, now time.Time) (expiry time.Time, due bool) {
	if days <= 0 {
		return time.Time{}, false
	}
	expiry, ok := CertificatesExpiry(m)
	if !ok {
		return time.Time{}, false
	}
	return expiry, now.Add(time.Duration(days) * 24 * time.Hour).After(expiry)
}

// Action is what is done about one Machine's certificates.
type Action int

const (
	// Nothing is done: not due, or no path for this Machine (an agent without SUC).
	Nothing Action = iota
	// Restart k3s on the node through SUC.
	Restart
	// WaitForReport of the node: a restart for this expiry completed, and the
	// node's report may still be on its way.
	WaitForReport
	// Replace the server, as KCP does.
	Replace
	// Stopped means a restart for this expiry completed, and ReportGrace later the node
	// still reports it. A k3s restart renews every leaf certificate within its window
	// (k3s pkg/daemons/control/deps/deps.go), so the report is not one a restart
	// renews: forged, or a certificate k3s does not renew. Neither another restart
	// nor a replacement is made for it; the control plane says so instead.
	Stopped
	// Cooldown means the node was restarted for its certificates less than
	// RestartInterval ago, for another expiry; the next restart waits.
	Cooldown
)

// RestartInterval is the least time between two certificate restarts of one node. A
// restart renews every leaf within k3s's 120-day window to a new lifetime (365 days
// by default), so a genuine report is never due again the next day; a forged one,
// rewritten after each restart, restarts a node at most once a day.
const RestartInterval = 24 * time.Hour

// Decide is what to do about m: replace a server whose certificates are due
// when the in-place path is not available; restart k3s on it (server or agent) when
// it is, at most once per reported expiry. After a restart whose report still shows
// the same expiry after ReportGrace, nothing more (Stopped): a report that a
// restart does not change is not escalated to a replacement, or a forged one would
// replace every server. An agent has no replacement here: its MachineDeployment
// owns it.
func Decide(m *clusterv1.Machine, days int32, inPlace bool, now time.Time) (Action, time.Time) {
	expiry, due := Due(m, days, now)
	if !due || !m.DeletionTimestamp.IsZero() {
		return Nothing, time.Time{}
	}
	server := IsServer(m)
	if restartedFor, at, ok := lastRestart(m); ok && restartedFor.Equal(expiry) {
		if now.Before(at.Add(ReportGrace)) {
			return WaitForReport, expiry
		}
		return Stopped, expiry
	} else if ok && now.Before(at.Add(RestartInterval)) {
		return Cooldown, expiry
	}
	switch {
	case inPlace:
		return Restart, expiry
	case server:
		return Replace, expiry
	}
	return Nothing, expiry
}

// ReplaceReason is why the rollout replaces a server for its certificates, or "".
func ReplaceReason(m *clusterv1.Machine, days int32, inPlace bool, now time.Time) string {
	action, expiry := Decide(m, days, inPlace, now)
	if action != Replace {
		return ""
	}
	return fmt.Sprintf("certificates expire at %s, within rollout.before.certificatesExpiryDays (%d days)", expiry.UTC().Format(time.RFC3339), days)
}

// CooldownMessage names the Machines whose next restart waits for RestartInterval, or "".
func CooldownMessage(machines []*clusterv1.Machine, days int32, now time.Time) string {
	var names []string
	for _, m := range machines {
		if action, expiry := Decide(m, days, true, now); action == Cooldown {
			_, at, _ := lastRestart(m)
			names = append(names, fmt.Sprintf("%s (expiry %s, not before %s)", m.Name, expiry.UTC().Format(time.RFC3339), at.Add(RestartInterval).UTC().Format(time.RFC3339)))
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return fmt.Sprintf("a node is restarted for its certificates at most once every %s, and these were restarted for another expiry: %s",
		RestartInterval, strings.Join(names, ", "))
}

// StoppedMessage names the Machines whose restart renewed nothing, or "".
func StoppedMessage(machines []*clusterv1.Machine, days int32, now time.Time) string {
	var names []string
	for _, m := range machines {
		if action, expiry := Decide(m, days, true, now); action == Stopped {
			_, at, _ := lastRestart(m)
			names = append(names, fmt.Sprintf("%s (expiry %s, restarted at %s)", m.Name, expiry.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339)))
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return fmt.Sprintf("k3s was restarted for its certificates on %s, and the node still reports the same expiry: "+
		"a restart renews every leaf certificate k3s reports, so this report is not one a restart renews (forged, or a certificate k3s does not renew); "+
		"nothing more is done for it. Check the node with `k3s certificate check`; to restart it again remove the annotation %s from its Machine; "+
		"to replace a server delete its Machine", strings.Join(names, ", "), controlplanev1.CertificatesRestartedForAnnotation)
}

// lastRestart reads the record of the last completed restart on m.
func lastRestart(m *clusterv1.Machine) (expiry, at time.Time, ok bool) {
	e, err1 := time.Parse(time.RFC3339, m.Annotations[controlplanev1.CertificatesRestartedForAnnotation])
	a, err2 := time.Parse(time.RFC3339, m.Annotations[controlplanev1.CertificatesRestartedAtAnnotation])
	return e, a, err1 == nil && err2 == nil
}

// RenewingExpiry is the expiry a restart under way on m renews; ok is false when none is.
func RenewingExpiry(m *clusterv1.Machine) (time.Time, bool) {
	v, found := m.Annotations[controlplanev1.CertificatesRenewingAnnotation]
	if !found {
		return time.Time{}, false
	}
	// A mark that does not parse is still a restart under way: it is followed (and
	// ended) under the zero time rather than forgotten.
	t, _ := time.Parse(time.RFC3339, v)
	return t, true
}

// RestartCandidates are the Machines whose k3s is to be restarted, the soonest expiry
// first (then by name, so that every pass picks the same one).
func RestartCandidates(machines collections.Machines, days int32, inPlace bool, now time.Time) []*clusterv1.Machine {
	var out []*clusterv1.Machine
	expiries := map[string]time.Time{}
	for _, m := range machines {
		if action, expiry := Decide(m, days, inPlace, now); action == Restart {
			out = append(out, m)
			expiries[m.Name] = expiry
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := expiries[out[i].Name], expiries[out[j].Name]
		if !a.Equal(b) {
			return a.Before(b)
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// QuorumBlocked says why restarting k3s on server target would cost the etcd quorum,
// or "": while target's member is down, the other members must still be a quorum of
// all (the quorum rule of remediation). healthy says whether a server counts towards
// the quorum. A single server has no quorum to keep: its restart is the brief outage
// k3s's own renewal takes, and the alternative (a replacement) is a longer one.
func QuorumBlocked(servers collections.Machines, target *clusterv1.Machine, healthy func(*clusterv1.Machine) bool) string {
	if servers.Len() == 1 {
		return ""
	}
	n := 0
	for _, m := range servers {
		if m.Name != target.Name && healthy(m) {
			n++
		}
	}
	if quorum := servers.Len()/2 + 1; n < quorum {
		return fmt.Sprintf("restarting k3s on %s would leave %d of %d etcd members healthy, fewer than a quorum of %d", target.Name, n, servers.Len(), quorum)
	}
	return ""
}

// UntilDue is how long until the next Machine's certificates enter the
// window, or a restart's report grace ends: time-based events no watch reports.
func UntilDue(machines []*clusterv1.Machine, days int32, now time.Time) time.Duration {
	if days <= 0 {
		return 0
	}
	var soonest time.Duration
	consider := func(at time.Time) {
		if d := at.Sub(now); d > 0 && (soonest == 0 || d < soonest) {
			soonest = d
		}
	}
	for _, m := range machines {
		if expiry, ok := CertificatesExpiry(m); ok {
			consider(expiry.Add(-time.Duration(days) * 24 * time.Hour))
		}
		if _, at, ok := lastRestart(m); ok {
			consider(at.Add(ReportGrace))
			consider(at.Add(RestartInterval))
		}
	}
	// A second after the moment, so that the pass sees it passed.
	if soonest > 0 {
		soonest += time.Second
	}
	return soonest
}

// IsServer says m is a control-plane (server) Machine.
func IsServer(m *clusterv1.Machine) bool {
	_, ok := m.Labels[clusterv1.MachineControlPlaneLabel]
	return ok
}
