package renewalplan

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/cpfixtures"
)

var renewalNow = time.Date(2027, 6, 1, 12, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

func rfc(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// certMachine is a Machine with a certificate report: the annotation (when annotated
// is not zero) and CAPI's status copy (when status is not zero).
func certMachine(name string, server bool, annotated, status time.Time, more map[string]string) *clusterv1.Machine {
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}, Labels: map[string]string{}}}
	if server {
		m.Labels[clusterv1.MachineControlPlaneLabel] = ""
	}
	if !annotated.IsZero() {
		m.Annotations[clusterv1.MachineCertificatesExpiryDateAnnotation] = rfc(annotated)
	}
	if !status.IsZero() {
		m.Status.CertificatesExpiryDate = metav1.NewTime(status)
	}
	for k, v := range more {
		m.Annotations[k] = v
	}
	return m
}

func TestRenewalDue(t *testing.T) {
	window := renewalNow.Add(30 * day)
	var none time.Time
	cases := []struct {
		name string
		m    *clusterv1.Machine
		days int32
		want bool
	}{
		{"unset field renews nothing", certMachine("a", true, renewalNow.Add(day), none, nil), 0, false},
		{"no report yet (a node that never reports)", certMachine("a", true, none, none, nil), 30, false},
		{"inside the window", certMachine("a", true, window.Add(-time.Second), none, nil), 30, true},
		{"tie: exactly at the window's end is not due yet (KCP's rule)", certMachine("a", true, window, none, nil), 30, false},
		{"beyond the window", certMachine("a", true, window.Add(time.Second), none, nil), 30, false},
		{"already expired (or the management clock ahead of the node's)", certMachine("a", true, renewalNow.Add(-day), none, nil), 30, true},
		{"status only, as CAPI copied it for a server", certMachine("a", true, none, window.Add(-day), nil), 30, true},
		{"the annotation wins over a stale status", certMachine("a", true, renewalNow.Add(200*day), window.Add(-day), nil), 30, false},
		{"an annotation that does not parse falls back to the status", certMachine("a", true, none, window.Add(-day),
			map[string]string{clusterv1.MachineCertificatesExpiryDateAnnotation: "next tuesday"}), 30, true},
		{"an annotation that does not parse and no status is no report", certMachine("a", false, none, none,
			map[string]string{clusterv1.MachineCertificatesExpiryDateAnnotation: "next tuesday"}), 30, false},
		{"an agent's report is its annotation", certMachine("w", false, window.Add(-day), none, nil), 30, true},
		{"a date written in another zone is the same instant", certMachine("a", true, none, none,
			map[string]string{clusterv1.MachineCertificatesExpiryDateAnnotation: window.In(time.FixedZone("x", 5*3600)).Format(time.RFC3339)}), 30, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := Due(tc.m, tc.days, renewalNow); got != tc.want {
				t.Errorf("due = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDecideRenewal(t *testing.T) {
	expiry := renewalNow.Add(10 * day)
	restarted := func(at time.Time, forExpiry time.Time) map[string]string {
		return map[string]string{
			controlplanev1.CertificatesRestartedForAnnotation: rfc(forExpiry),
			controlplanev1.CertificatesRestartedAtAnnotation:  rfc(at),
		}
	}
	deleting := certMachine("a", true, expiry, time.Time{}, nil)
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(renewalNow))
	cases := []struct {
		name    string
		m       *clusterv1.Machine
		inPlace bool
		want    Action
	}{
		{"server, in place", certMachine("a", true, expiry, time.Time{}, nil), true, Restart},
		{"server, no in-place path: replaced as KCP does", certMachine("a", true, expiry, time.Time{}, nil), false, Replace},
		{"agent, in place", certMachine("w", false, expiry, time.Time{}, nil), true, Restart},
		{"agent, no in-place path: left to its MachineDeployment", certMachine("w", false, expiry, time.Time{}, nil), false, Nothing},
		{"not due", certMachine("a", true, renewalNow.Add(90*day), time.Time{}, nil), true, Nothing},
		{"being deleted", deleting, true, Nothing},
		{"restarted for this expiry, report still on its way", certMachine("a", true, expiry, time.Time{}, restarted(renewalNow.Add(-time.Minute), expiry)), true, WaitForReport},
		// A restart renews every leaf k3s reports: a date it did not change is not one a
		// restart renews (forged, or a CA read as a leaf), and a replacement is no more
		// than churn for it.
		{"restarted for this expiry, renewed nothing: a server is stopped, not replaced", certMachine("a", true, expiry, time.Time{}, restarted(renewalNow.Add(-2*time.Hour), expiry)), true, Stopped},
		{"restarted for this expiry, renewed nothing, and the in-place path gone since: still stopped", certMachine("a", true, expiry, time.Time{}, restarted(renewalNow.Add(-2*time.Hour), expiry)), false, Stopped},
		{"restarted for this expiry, renewed nothing: an agent is stopped", certMachine("w", false, expiry, time.Time{}, restarted(renewalNow.Add(-2*time.Hour), expiry)), true, Stopped},
		{"restarted a year ago for another expiry", certMachine("a", true, expiry, time.Time{}, restarted(renewalNow.Add(-365*day), expiry.Add(-365*day))), true, Restart},
		// A restart renews every leaf to a new lifetime: due again, for another date,
		// within a day of a restart is no genuine report; the node waits.
		{"restarted an hour ago for another expiry: the next restart waits a day", certMachine("a", true, expiry, time.Time{}, restarted(renewalNow.Add(-time.Hour), expiry.Add(-day))), true, Cooldown},
		{"restarted 25 hours ago for another expiry", certMachine("a", true, expiry, time.Time{}, restarted(renewalNow.Add(-25*time.Hour), expiry.Add(-day))), true, Restart},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := Decide(tc.m, 30, tc.inPlace, renewalNow)
			if got != tc.want {
				t.Errorf("action = %v, want %v", got, tc.want)
			}
			reason := ReplaceReason(tc.m, 30, tc.inPlace, renewalNow)
			if (reason != "") != (tc.want == Replace) {
				t.Errorf("replace reason %q for action %v", reason, tc.want)
			}
		})
	}
}

func TestRenewalReplaceReasonNamesTheExpiry(t *testing.T) {
	expiry := renewalNow.Add(10 * day)
	got := ReplaceReason(certMachine("a", true, expiry, time.Time{}, nil), 30, false, renewalNow)
	want := "certificates expire at " + rfc(expiry) + ", within rollout.before.certificatesExpiryDays (30 days)"
	if got != want {
		t.Errorf("reason = %q, want %q", got, want)
	}
}

func TestStoppedMessageSaysWhatToDo(t *testing.T) {
	expiry := renewalNow.Add(10 * day)
	stopped := certMachine("a", true, expiry, time.Time{}, map[string]string{
		controlplanev1.CertificatesRestartedForAnnotation: rfc(expiry),
		controlplanev1.CertificatesRestartedAtAnnotation:  rfc(renewalNow.Add(-2 * time.Hour)),
	})
	due := certMachine("b", true, expiry, time.Time{}, nil)
	got := StoppedMessage([]*clusterv1.Machine{due, stopped}, 30, renewalNow)
	for _, want := range []string{"on a (expiry " + rfc(expiry), "k3s certificate check", controlplanev1.CertificatesRestartedForAnnotation, "delete its Machine"} {
		if !strings.Contains(got, want) {
			t.Errorf("message %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, " b ") {
		t.Errorf("message names b, which was never restarted: %q", got)
	}
	if got := StoppedMessage([]*clusterv1.Machine{due}, 30, renewalNow); got != "" {
		t.Errorf("nothing stopped: %q", got)
	}
}

func TestCooldownMessage(t *testing.T) {
	expiry := renewalNow.Add(10 * day)
	at := renewalNow.Add(-time.Hour)
	m := certMachine("a", true, expiry, time.Time{}, map[string]string{
		controlplanev1.CertificatesRestartedForAnnotation: rfc(expiry.Add(-day)),
		controlplanev1.CertificatesRestartedAtAnnotation:  rfc(at),
	})
	got := CooldownMessage([]*clusterv1.Machine{m, certMachine("b", true, expiry, time.Time{}, nil)}, 30, renewalNow)
	if want := "a (expiry " + rfc(expiry) + ", not before " + rfc(at.Add(RestartInterval)) + ")"; !strings.Contains(got, want) || strings.Contains(got, "b (") {
		t.Errorf("message %q, want it to name a alone: %q", got, want)
	}
}

func TestRestartCandidatesSoonestFirst(t *testing.T) {
	machines := collections.FromMachines(
		certMachine("c", true, renewalNow.Add(5*day), time.Time{}, nil),
		certMachine("b", true, renewalNow.Add(2*day), time.Time{}, nil),
		certMachine("a", true, renewalNow.Add(5*day), time.Time{}, nil),
		certMachine("d", true, renewalNow.Add(60*day), time.Time{}, nil),
	)
	var got []string
	for _, m := range RestartCandidates(machines, 30, true, renewalNow) {
		got = append(got, m.Name)
	}
	if want := []string{"b", "a", "c"}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("order = %v, want %v", got, want)
	}
}

func TestQuorumBlocked(t *testing.T) {
	three := collections.FromMachines(
		cpfixtures.ServerMachine("a"),
		cpfixtures.ServerMachine("b"),
		cpfixtures.ServerMachine("c"),
	)
	five := three.DeepCopy()
	five.Insert(cpfixtures.ServerMachine("d"))
	five.Insert(cpfixtures.ServerMachine("e"))
	all := func(*clusterv1.Machine) bool { return true }
	but := func(names ...string) func(*clusterv1.Machine) bool {
		return func(m *clusterv1.Machine) bool { return !slices.Contains(names, m.Name) }
	}
	cases := []struct {
		name    string
		servers collections.Machines
		healthy func(*clusterv1.Machine) bool
		want    string
	}{
		{"all healthy", three, all, ""},
		{"another member down: the restart would lose quorum", three, but("b"), "restarting k3s on a would leave 1 of 3 etcd members healthy, fewer than a quorum of 2"},
		{"the target itself down: the others are a quorum", three, but("a"), ""},
		{"five, one other down: three left", five, but("b"), ""},
		{"five, two others down", five, but("b", "c"), "would leave 2 of 5 etcd members healthy, fewer than a quorum of 3"},
		{"a single server has no quorum to keep", collections.FromMachines(cpfixtures.ServerMachine("a")), but("a"), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := QuorumBlocked(tc.servers, tc.servers["a"], tc.healthy)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("blocked = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestUntilRenewalDue(t *testing.T) {
	machines := []*clusterv1.Machine{
		certMachine("a", true, renewalNow.Add(40*day), time.Time{}, nil),  // enters a 30-day window in 10 days
		certMachine("b", false, renewalNow.Add(35*day), time.Time{}, nil), // in 5 days
		certMachine("c", true, renewalNow.Add(10*day), time.Time{}, nil),  // inside already: nothing to wait for
	}
	if got, want := UntilDue(machines, 30, renewalNow), 5*day+time.Second; got != want {
		t.Errorf("wake in %v, want %v", got, want)
	}
	if got := UntilDue(machines, 0, renewalNow); got != 0 {
		t.Errorf("unset field: wake in %v, want never", got)
	}
	restarted := certMachine("d", true, renewalNow.Add(10*day), time.Time{}, map[string]string{
		controlplanev1.CertificatesRestartedForAnnotation: rfc(renewalNow.Add(10 * day)),
		controlplanev1.CertificatesRestartedAtAnnotation:  rfc(renewalNow.Add(-50 * time.Minute)),
	})
	if got, want := UntilDue([]*clusterv1.Machine{restarted}, 30, renewalNow), 10*time.Minute+time.Second; got != want {
		t.Errorf("report grace: wake in %v, want %v", got, want)
	}
}
