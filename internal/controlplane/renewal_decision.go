package controlplane

import (
	"fmt"
	"sort"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/workload"
)

// The decisions of certificate renewal (spec.rollout.before.certificatesExpiryDays),
// pure so that they are tested as tables; renewal.go acts on them.

// renewalReportGrace is how long after a completed restart the node's report of its
// certificates may still show the old expiry before the restart counts as having
// renewed nothing. k3s checks its certificates once its apiserver is up after a start
// (pkg/certmonitor, k3s v1.34-v1.36), so a renewed node reports within minutes.
const renewalReportGrace = time.Hour

// certificatesExpiry is when a Machine's k3s certificates expire, as far as the
// management cluster knows: the Machine's certificates-expiry annotation (the source,
// and for agents the only record: CAPI's Machine controller copies it into
// status.certificatesExpiryDate for control-plane Machines only), else that status
// field. ok is false without either (no report yet: nothing is decided on it). An
// annotation that does not parse falls back to the status, as a report that cannot be
// read says nothing.
func certificatesExpiry(m *clusterv1.Machine) (expiry time.Time, ok bool) {
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

// renewalDue says whether m's certificates expire sooner than now + days, KCP's rule:
// an expiry exactly at the window's end is not due yet. days 0 (unset) renews nothing.
// An expiry already passed is due too: the management cluster's clock may be ahead
// of the node's, or the certificate has expired, and either way a restart renews it.
func renewalDue(m *clusterv1.Machine, days int32, now time.Time) (expiry time.Time, due bool) {
	if days <= 0 {
		return time.Time{}, false
	}
	expiry, ok := certificatesExpiry(m)
	if !ok {
		return time.Time{}, false
	}
	return expiry, now.Add(time.Duration(days) * 24 * time.Hour).After(expiry)
}

// renewalAction is what is done about one Machine's certificates.
type renewalAction int

const (
	// renewNothing: not due, or no path for this Machine (an agent without SUC).
	renewNothing renewalAction = iota
	// renewRestart: restart k3s on the node through SUC.
	renewRestart
	// renewWaitForReport: a restart for this expiry completed; the node's report may
	// still be on its way.
	renewWaitForReport
	// renewReplace: replace the server, as KCP does.
	renewReplace
)

// decideRenewal is what to do about m: replace a server whose certificates are due
// when the in-place path is not available; restart k3s on it (server or agent) when
// it is, at most once per reported expiry (a restart that renewed nothing is not
// repeated: k3s renews only within its window, so a second restart would not either);
// after a restart whose report still shows the same expiry after renewalReportGrace,
// replace a server. An agent has no replacement here: its MachineDeployment owns it.
func decideRenewal(m *clusterv1.Machine, days int32, inPlace bool, now time.Time) (renewalAction, time.Time) {
	expiry, due := renewalDue(m, days, now)
	if !due || !m.DeletionTimestamp.IsZero() {
		return renewNothing, time.Time{}
	}
	server := isServerMachine(m)
	if restartedFor, at, ok := lastRestart(m); ok && restartedFor.Equal(expiry) {
		if now.Before(at.Add(renewalReportGrace)) {
			return renewWaitForReport, expiry
		}
		if server {
			return renewReplace, expiry
		}
		return renewNothing, expiry
	}
	switch {
	case inPlace:
		return renewRestart, expiry
	case server:
		return renewReplace, expiry
	}
	return renewNothing, expiry
}

// renewalReplaceReason is why the rollout replaces a server for its certificates, or "".
func renewalReplaceReason(m *clusterv1.Machine, days int32, inPlace bool, now time.Time) string {
	action, expiry := decideRenewal(m, days, inPlace, now)
	if action != renewReplace {
		return ""
	}
	why := fmt.Sprintf("certificates expire at %s, within rollout.before.certificatesExpiryDays (%d days)", expiry.UTC().Format(time.RFC3339), days)
	if _, at, ok := lastRestart(m); ok {
		why += fmt.Sprintf("; the k3s restart completed at %s did not renew them", at.UTC().Format(time.RFC3339))
	}
	return why
}

// lastRestart reads the record of the last completed restart on m.
func lastRestart(m *clusterv1.Machine) (expiry, at time.Time, ok bool) {
	e, err1 := time.Parse(time.RFC3339, m.Annotations[controlplanev1.CertificatesRestartedForAnnotation])
	a, err2 := time.Parse(time.RFC3339, m.Annotations[controlplanev1.CertificatesRestartedAtAnnotation])
	return e, a, err1 == nil && err2 == nil
}

// renewingExpiry is the expiry a restart under way on m renews; ok is false when none is.
func renewingExpiry(m *clusterv1.Machine) (time.Time, bool) {
	v, found := m.Annotations[controlplanev1.CertificatesRenewingAnnotation]
	if !found {
		return time.Time{}, false
	}
	// A mark that does not parse is still a restart under way: it is followed (and
	// ended) under the zero time rather than forgotten.
	t, _ := time.Parse(time.RFC3339, v)
	return t, true
}

// restartCandidates are the Machines whose k3s is to be restarted, the soonest expiry
// first (then by name, so that every pass picks the same one).
func restartCandidates(machines collections.Machines, days int32, inPlace bool, now time.Time) []*clusterv1.Machine {
	var out []*clusterv1.Machine
	expiries := map[string]time.Time{}
	for _, m := range machines {
		if action, expiry := decideRenewal(m, days, inPlace, now); action == renewRestart {
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

// serverRestartBlocked says why k3s must not be restarted on server target now, or "".
// The same rules as a step that changes the servers (preflight: initialized, nothing
// being deleted, every server's Node Ready), and the quorum rule of remediation: while
// target's etcd member is down, the other members must still be a quorum of all. A
// single server has no quorum to keep: its restart is the brief outage k3s's own
// renewal takes, and the alternative (a replacement) is a longer one. With an external
// datastore the servers hold no data; the others serve meanwhile.
func serverRestartBlocked(kcp *controlplanev1.KThreesControlPlane, machines collections.Machines, nodes workload.Nodes, target *clusterv1.Machine) string {
	if blocked := preflight(machines, nodes, isTrue(kcp.Status.Initialization.ControlPlaneInitialized)); blocked != "" {
		return blocked
	}
	if externalDatastore(kcp) || machines.Len() == 1 {
		return ""
	}
	healthy := 0
	for _, m := range machines {
		if m.Name != target.Name && isHealthyServer(m, nodes) {
			healthy++
		}
	}
	if quorum := machines.Len()/2 + 1; healthy < quorum {
		return fmt.Sprintf("restarting k3s on %s would leave %d of %d etcd members healthy, fewer than a quorum of %d", target.Name, healthy, machines.Len(), quorum)
	}
	return ""
}

// untilRenewalDue is how long until the next Machine's certificates enter the
// window, or a restart's report grace ends: time-based events no watch reports.
func untilRenewalDue(machines []*clusterv1.Machine, days int32, now time.Time) time.Duration {
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
		if expiry, ok := certificatesExpiry(m); ok {
			consider(expiry.Add(-time.Duration(days) * 24 * time.Hour))
		}
		if _, at, ok := lastRestart(m); ok {
			consider(at.Add(renewalReportGrace))
		}
	}
	// A second after the moment, so that the pass sees it passed.
	if soonest > 0 {
		soonest += time.Second
	}
	return soonest
}

func isServerMachine(m *clusterv1.Machine) bool {
	_, ok := m.Labels[clusterv1.MachineControlPlaneLabel]
	return ok
}
