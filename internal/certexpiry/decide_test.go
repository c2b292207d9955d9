package certexpiry

import (
	"reflect"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)

func warn(at time.Time, rv string, lines ...string) Event {
	msg := "Node certificates require attention - restart k3s on this node to trigger automatic rotation: "
	for i, l := range lines {
		if i > 0 {
			msg += "\n"
		}
		msg += l
	}
	return Event{Reason: ReasonLeafWarning, Message: msg, Time: at, ResourceVersion: rv}
}

// caWarn is a CA warning about the server CA (serverC), as k3s names its file.
func caWarn(at time.Time, rv string) Event {
	return Event{Reason: ReasonCAWarning, Time: at, ResourceVersion: rv,
		Message: "Certificate Authority certificates require attention - check k3s documentation and begin planning rotation: " + serverC}
}

func ok(at time.Time, rv string) Event {
	return Event{Reason: ReasonOK, Time: at, ResourceVersion: rv, Message: "Node and Certificate Authority certificates managed by k3s are OK"}
}

const (
	kubelet = "kubelet/client-kubelet.crt: certificate CN=system:node:n,O=system:nodes will expire within 120 days at 2027-03-01T10:00:00Z"
	proxy   = "kube-proxy/client-kube-proxy.crt: certificate CN=system:kube-proxy will expire within 120 days at 2027-02-01T10:00:00Z"
	renewed = "kubelet/client-kubelet.crt: certificate CN=system:node:n,O=system:nodes will expire within 120 days at 2027-11-20T08:00:00Z"
	serverC = "certificate-authority/server-ca.crt: certificate CN=k3s-server-ca@1700000000 will expire within 365 days at 2027-06-01T00:00:00Z"
	// The client CA capk3s made (Cluster API names it CN=kubernetes), as it follows
	// the leaf in two leaf files.
	clientCAInKubelet = "kubelet/client-kubelet.crt: certificate CN=kubernetes will expire within 120 days at 2027-01-15T00:00:00Z"
	clientCAInProxy   = "kube-proxy/client-kube-proxy.crt: certificate CN=kubernetes will expire within 120 days at 2027-01-15T00:00:00Z"
)

func date(s string) time.Time {
	d, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return d
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []Event
		cas    KnownCAs
		want   Node
	}{{
		name: "a node that never reported",
		want: Node{State: Unknown},
	}, {
		name:   "events of other reasons only",
		events: []Event{{Reason: "Starting", Time: t0}},
		want:   Node{State: Unknown},
	}, {
		name:   "the soonest certificate of a warning",
		events: []Event{warn(t0, "10", kubelet, proxy)},
		want:   Node{State: InWindow, Expiry: date("2027-02-01T10:00:00Z"), Certificate: "kube-proxy/client-kube-proxy.crt", CheckedAt: t0},
	}, {
		name:   "OK at start: later than the check plus 120 days",
		events: []Event{ok(t0, "10")},
		want:   Node{State: Clear, CheckedAt: t0},
	}, {
		name:   "an OK after a warning (k3s restarted and renewed) wins",
		events: []Event{warn(t0, "10", kubelet), ok(t0.Add(time.Hour), "20")},
		want:   Node{State: Clear, CheckedAt: t0.Add(time.Hour)},
	}, {
		// k3s records OK only when its check found nothing to warn about, so an OK is
		// never part of a warning's check, however close in time: a node that restarts
		// at once may report within the 2 s that group one check's Events.
		name:   "an OK seconds after a warning (k3s restarted at once) is a check of its own",
		events: []Event{warn(t0, "10", kubelet), caWarn(t0, "11"), ok(t0.Add(2*time.Second), "20")},
		want:   Node{State: Clear, CheckedAt: t0.Add(2 * time.Second)},
	}, {
		name:   "a warning after an OK (time passed) wins",
		events: []Event{ok(t0, "10"), warn(t0.Add(30*time.Minute), "20", kubelet)},
		want:   Node{State: InWindow, Expiry: date("2027-03-01T10:00:00Z"), Certificate: "kubelet/client-kubelet.crt", CheckedAt: t0.Add(30 * time.Minute)},
	}, {
		name:   "restarted after a warning, still within the window: the new warning wins over the old one",
		events: []Event{warn(t0, "10", kubelet), warn(t0.Add(10*time.Minute), "20", renewed)},
		want:   Node{State: InWindow, Expiry: date("2027-11-20T08:00:00Z"), Certificate: "kubelet/client-kubelet.crt", CheckedAt: t0.Add(10 * time.Minute)},
	}, {
		name: "restart renewed the leaves but a CA warns: the check without a leaf warning clears it",
		events: []Event{warn(t0, "10", kubelet), caWarn(t0, "11"),
			caWarn(t0.Add(10*time.Minute), "20")},
		want: Node{State: Clear, CheckedAt: t0.Add(10 * time.Minute), CAExpiry: date("2027-06-01T00:00:00Z"), CA: "certificate-authority/server-ca.crt", CASubject: "CN=k3s-server-ca@1700000000"},
	}, {
		name:   "leaf and CA warnings of one check, a second apart",
		events: []Event{caWarn(t0.Add(time.Second), "11"), warn(t0, "10", kubelet)},
		want: Node{State: InWindow, Expiry: date("2027-03-01T10:00:00Z"), Certificate: "kubelet/client-kubelet.crt", CheckedAt: t0.Add(time.Second),
			CAExpiry: date("2027-06-01T00:00:00Z"), CA: "certificate-authority/server-ca.crt", CASubject: "CN=k3s-server-ca@1700000000"},
	}, {
		// k3s lists the CA that follows a leaf in its file under the leaf's name; a
		// restart renews the leaf, never the CA: this node has nothing to restart for.
		name:   "only the client CA under a leaf file (a CA the management cluster holds): Clear, the CA reported",
		events: []Event{warn(t0, "10", clientCAInKubelet, clientCAInProxy)},
		cas:    KnownCAs{{Subject: "CN=kubernetes", NotAfter: date("2027-01-15T00:00:00Z")}: true},
		want:   Node{State: Clear, CheckedAt: t0, CAExpiry: date("2027-01-15T00:00:00Z"), CA: "kubelet/client-kubelet.crt", CASubject: "CN=kubernetes"},
	}, {
		name:   "a CA k3s made itself (its name says so) under a leaf file, beside an expiring leaf: the leaf's date",
		events: []Event{warn(t0, "10", kubelet, "auth-proxy/client-auth-proxy.crt: certificate CN=k3s-request-header-ca@1700000000 will expire within 120 days at 2027-01-10T00:00:00Z")},
		want: Node{State: InWindow, Expiry: date("2027-03-01T10:00:00Z"), Certificate: "kubelet/client-kubelet.crt", CheckedAt: t0,
			CAExpiry: date("2027-01-10T00:00:00Z"), CA: "auth-proxy/client-auth-proxy.crt", CASubject: "CN=k3s-request-header-ca@1700000000"},
	}, {
		name:   "a subject and date no CA of the cluster has is a leaf",
		events: []Event{warn(t0, "10", clientCAInKubelet)},
		cas:    KnownCAs{{Subject: "CN=kubernetes", NotAfter: date("2028-01-15T00:00:00Z")}: true},
		want:   Node{State: InWindow, Expiry: date("2027-01-15T00:00:00Z"), Certificate: "kubelet/client-kubelet.crt", CheckedAt: t0},
	}, {
		// Any Event writer can copy a leaf's subject and date into a CA warning that
		// passes Accept: it is reported as a CA, and the leaf still has its date.
		name: "a forged CA warning with a leaf's subject and date hides no leaf",
		events: []Event{warn(t0, "10", kubelet), {Reason: ReasonCAWarning, Time: t0, ResourceVersion: "11",
			Message: CALead + "certificate-authority/client-ca.crt: certificate CN=system:node:n,O=system:nodes will expire within 365 days at 2027-03-01T10:00:00Z"}},
		cas: KnownCAs{{Subject: "CN=kubernetes", NotAfter: date("2027-01-15T00:00:00Z")}: true},
		want: Node{State: InWindow, Expiry: date("2027-03-01T10:00:00Z"), Certificate: "kubelet/client-kubelet.crt", CheckedAt: t0,
			CAExpiry: date("2027-03-01T10:00:00Z"), CA: "certificate-authority/client-ca.crt", CASubject: "CN=system:node:n,O=system:nodes"},
	}, {
		name:   "clock corrected backwards between the warning and the restart: write order decides, not the node's clock",
		events: []Event{warn(t0, "10", kubelet), ok(t0.Add(-time.Hour), "20")},
		want:   Node{State: Clear, CheckedAt: t0.Add(-time.Hour)},
	}, {
		name:   "a tie the write order cannot break goes to the warning",
		events: []Event{ok(t0, ""), warn(t0, "", kubelet)},
		want:   Node{State: InWindow, Expiry: date("2027-03-01T10:00:00Z"), Certificate: "kubelet/client-kubelet.crt", CheckedAt: t0},
	}, {
		name:   "an expired certificate",
		events: []Event{warn(t0, "10", "api-server/serving-kube-apiserver.crt: certificate CN=kube-apiserver expired at 2026-11-01T00:00:00Z", kubelet)},
		want:   Node{State: InWindow, Expiry: date("2026-11-01T00:00:00Z"), Certificate: "api-server/serving-kube-apiserver.crt", CheckedAt: t0},
	}, {
		name:   "only a certificate not valid yet: its expiry was not checked",
		events: []Event{warn(t0, "10", "kubelet/client-kubelet.crt: certificate CN=x is not valid before 2026-11-21T00:00:00Z")},
		want:   Node{State: Unknown, CheckedAt: t0, NotYetValid: []string{"kubelet/client-kubelet.crt"}},
	}, {
		name:   "a warning worded in a way this cannot read",
		events: []Event{warn(t0, "10", "kubelet: certificates are old")},
		want:   Node{State: Unknown, CheckedAt: t0},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.events, tc.cas); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestLaterThanIsTheCheckPlusTheWindow(t *testing.T) {
	if got, want := (Node{State: Clear, CheckedAt: t0}).LaterThan(), t0.Add(120*24*time.Hour); !got.Equal(want) {
		t.Errorf("got %s, want %s", got, want)
	}
	if got := (Node{State: Unknown}).LaterThan(); !got.IsZero() {
		t.Errorf("a node never checked: got %s, want nothing", got)
	}
}

func TestSummarize(t *testing.T) {
	now := date("2026-12-01T00:00:00Z")
	nodes := map[string]Node{
		"b":       {State: InWindow, Expiry: date("2027-02-01T00:00:00Z"), Certificate: "kubelet/client-kubelet.crt"},
		"a":       {State: InWindow, Expiry: date("2027-02-01T00:00:00Z"), Certificate: "kube-proxy/client-kube-proxy.crt"},
		"late":    {State: InWindow, Expiry: date("2027-03-01T00:00:00Z"), CAExpiry: date("2027-06-01T00:00:00Z"), CA: "certificate-authority/server-ca.crt", CASubject: "CN=k3s-server-ca@1700000000"},
		"skewed":  {State: InWindow, Expiry: date("2026-11-30T23:00:00Z"), Certificate: "api-server/serving-kube-apiserver.crt"},
		"fine":    {State: Clear, CheckedAt: now},
		"silent":  {State: Unknown},
		"earlyCA": {State: Clear, CAExpiry: date("2027-05-01T00:00:00Z"), CA: "etcd/server-ca.crt", CASubject: "CN=etcd-server-ca@1"},
	}
	got := Summarize(nodes, now)
	want := Summary{
		// A node whose own clock said "will expire" has expired by the management clock.
		Soonest: "skewed", Expiry: date("2026-11-30T23:00:00Z"), Certificate: "api-server/serving-kube-apiserver.crt",
		Expired: []string{"skewed"}, Expiring: []string{"a", "b", "late"}, Unknown: []string{"silent"},
		CANode: "earlyCA", CAExpiry: date("2027-05-01T00:00:00Z"), CA: "etcd/server-ca.crt", CASubject: "CN=etcd-server-ca@1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	delete(nodes, "skewed")
	if got := Summarize(nodes, now); got.Soonest != "a" {
		t.Errorf("a tie goes to the first name: got %q", got.Soonest)
	}
	if got := Summarize(nil, now); !reflect.DeepEqual(got, Summary{}) {
		t.Errorf("no nodes: got %+v", got)
	}
}

func TestAnnotationValue(t *testing.T) {
	for _, tc := range []struct {
		name    string
		node    Node
		running bool
		value   string
		keep    bool
	}{
		{"in the window: the soonest date, in UTC", Node{State: InWindow, Expiry: date("2027-02-28T12:00:00+02:00"), CheckedAt: t0}, true, "2027-02-28T10:00:00Z", false},
		{"clear: no invented date", Node{State: Clear, CheckedAt: t0}, true, "", false},
		{"a running node that never warned: none", Node{State: Unknown}, true, "", false},
		{"a node that does not run: the last date stays", Node{State: Unknown}, false, "", true},
		{"an unreadable warning: the last date stays", Node{State: Unknown, CheckedAt: t0}, true, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			value, keep := AnnotationValue(tc.node, tc.running)
			if value != tc.value || keep != tc.keep {
				t.Errorf("got (%q, %v), want (%q, %v)", value, keep, tc.value, tc.keep)
			}
		})
	}
}
