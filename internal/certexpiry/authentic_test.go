package certexpiry

import (
	"strings"
	"testing"
	"time"
)

// written is how k3s's recorder writes a certificate-monitor Event on node n
// (pkg/certmonitor/certmonitor.go, pkg/util/api.go, client-go tools/record).
func written(n string) Written {
	return Written{Name: n + ".18a2b3c4d5e6f708", Namespace: "default", Type: "Warning",
		Component: Source, Host: n, ReportingController: Source, ReportingInstance: n,
		ObjectKind: "Node", ObjectName: n, ObjectUID: n}
}

func TestAuthentic(t *testing.T) {
	k3sWarning := Event{Reason: ReasonLeafWarning, Message: LeafLead + kubelet, Time: t0, Written: written("n")}
	if why := Authentic(k3sWarning, "n"); why != "" {
		t.Fatalf("k3s's own warning refused: %s", why)
	}
	okEvent := Event{Reason: ReasonOK, Message: OKMessage, Written: written("n")}
	okEvent.Written.Type = "Normal"
	if why := Authentic(okEvent, "n"); why != "" {
		t.Fatalf("k3s's own OK refused: %s", why)
	}
	aggregated := k3sWarning
	aggregated.Message = aggregatedLead + k3sWarning.Message
	if why := Authentic(aggregated, "n"); why != "" {
		t.Fatalf("an Event client-go aggregated refused: %s", why)
	}
	for _, tc := range []struct {
		name   string
		change func(*Event)
		want   string
	}{
		{"another source (a chart's service account)", func(e *Event) { e.Written.Component = "my-operator" }, "source.component"},
		{"written by another node's kubelet about this node", func(e *Event) { e.Written.Host = "other" }, "source.host"},
		{"no reporting controller", func(e *Event) { e.Written.ReportingController = "" }, "reportingController"},
		{"another reporting instance", func(e *Event) { e.Written.ReportingInstance = "other" }, "reportingInstance"},
		{"about the Node object's real UID, which k3s never writes", func(e *Event) { e.Written.ObjectUID = "0b7c1a52-5e0f-4b52-8f27-1d1e2c3a4b5c" }, "involvedObject.uid"},
		{"about a Pod", func(e *Event) { e.Written.ObjectKind = "Pod" }, "involvedObject.kind"},
		{"with an apiVersion", func(e *Event) { e.Written.ObjectAPIVersion = "v1" }, "involvedObject.apiVersion"},
		{"in another namespace", func(e *Event) { e.Written.Namespace = "kube-system" }, "namespace"},
		{"a name client-go would not give", func(e *Event) { e.Written.Name = "cert-warning" }, "name"},
		{"a warning of type Normal", func(e *Event) { e.Written.Type = "Normal" }, "type"},
		{"a warning without k3s's words", func(e *Event) { e.Message = kubelet }, "message"},
		{"a CA warning with the leaf's words", func(e *Event) { e.Reason = ReasonCAWarning }, "message"},
		{"an OK with other words", func(e *Event) { e.Reason, e.Message, e.Written.Type = ReasonOK, "all fine", "Normal" }, "OK message"},
		{"another reason", func(e *Event) { e.Reason = "Rebooted" }, "reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := k3sWarning
			tc.change(&e)
			if why := Authentic(e, "n"); !strings.Contains(why, tc.want) {
				t.Errorf("got %q, want a refusal naming %q", why, tc.want)
			}
		})
	}
}

func TestAcceptLeavesOutWhatK3sDidNotWrite(t *testing.T) {
	good := Event{Reason: ReasonLeafWarning, Message: LeafLead + kubelet, Time: t0, Written: written("n")}
	forged := good
	forged.Written.Component = "forger"
	kept, rejected := Accept(map[string][]Event{"n": {good, forged}})
	if len(kept["n"]) != 1 || kept["n"][0].Written.Component != Source {
		t.Errorf("kept %+v, want k3s's Event alone", kept)
	}
	if len(rejected) != 1 || rejected[0].Node != "n" || !strings.Contains(rejected[0].Why, "source.component") {
		t.Errorf("rejected %+v", rejected)
	}
}

func TestKnownCAs(t *testing.T) {
	cas := KnownCAs{}
	cas.Add("CN=kubernetes", date("2027-01-15T00:00:00Z").Add(300*time.Millisecond))
	for _, tc := range []struct {
		c    Certificate
		want bool
	}{
		{Certificate{Subject: "CN=kubernetes", Status: Expiring, Date: date("2027-01-15T00:00:00Z")}, true},
		{Certificate{Subject: "CN=kubernetes", Status: Expired, Date: date("2027-01-15T00:00:00Z")}, true},
		{Certificate{Subject: "CN=kubernetes", Status: Expiring, Date: date("2027-01-16T00:00:00Z")}, false},
		{Certificate{Subject: "CN=k3s-server-ca@1700000000", Status: Expiring, Date: date("2027-06-01T00:00:00Z")}, true},
		{Certificate{Subject: "CN=etcd-peer-ca@1700000000", Status: Expiring, Date: date("2030-01-01T00:00:00Z")}, true},
		{Certificate{Subject: "CN=system:node:n,O=system:nodes", Status: Expiring, Date: date("2027-03-01T10:00:00Z")}, false},
	} {
		if got := cas.IsCA(tc.c); got != tc.want {
			t.Errorf("IsCA(%+v) = %v, want %v", tc.c, got, tc.want)
		}
	}
}

func TestImplausible(t *testing.T) {
	created := date("2026-06-01T00:00:00Z")
	in := func(expiry string) Node {
		return Node{State: InWindow, Expiry: date(expiry), Certificate: "kubelet/client-kubelet.crt"}
	}
	for _, tc := range []struct {
		name string
		n    Node
		bad  bool
	}{
		{"a year after creation", in("2027-06-01T00:00:00Z"), false},
		{"a certificate signed an hour before creation by a clock a day behind, for a day (CATTLE_NEW_SIGNED_CERT_EXPIRATION_DAYS=1)", in("2026-05-31T00:00:00Z"), false},
		{"before the machine existed", in("2026-01-01T00:00:00Z"), true},
		{"nothing in the window", Node{State: Clear}, false},
	} {
		if got := Implausible(tc.n, created); (got != "") != tc.bad {
			t.Errorf("%s: %q", tc.name, got)
		}
	}
	if got := Implausible(in("2026-01-01T00:00:00Z"), time.Time{}); got != "" {
		t.Errorf("no creation time known: %q", got)
	}
}
