package certexpiry

import (
	"testing"
	"time"
)

// leafWarning is a warning worded as k3s's certmonitor words it (v1.36.2): a preamble,
// then one line per certificate (errors.Join), dates in the node's time zone.
const leafWarning = "Node certificates require attention - restart k3s on this node to trigger automatic rotation: " +
	"kubelet/client-kubelet.crt: certificate CN=system:node:server-0,O=system:nodes will expire within 120 days at 2027-03-01T10:00:00Z\n" +
	"kube-proxy/client-kube-proxy.crt: certificate CN=system:kube-proxy will expire within 120 days at 2027-02-28T12:00:00+02:00\n" +
	"api-server/serving-kube-apiserver.crt: certificate CN=kube-apiserver expired at 2026-11-01T00:00:00Z\n" +
	"etcd/peer-server-client.crt: certificate CN=etcd-peer,O=k3s is not valid before 2027-01-01T00:00:00Z"

func TestParseMessageReadsEveryLineAsK3sWritesIt(t *testing.T) {
	got := ParseMessage(leafWarning)
	want := []Certificate{
		{File: "kubelet/client-kubelet.crt", Subject: "CN=system:node:server-0,O=system:nodes", Status: Expiring, Date: time.Date(2027, 3, 1, 10, 0, 0, 0, time.UTC)},
		{File: "kube-proxy/client-kube-proxy.crt", Subject: "CN=system:kube-proxy", Status: Expiring, Date: time.Date(2027, 2, 28, 10, 0, 0, 0, time.UTC)},
		{File: "api-server/serving-kube-apiserver.crt", Subject: "CN=kube-apiserver", Status: Expired, Date: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
		{File: "etcd/peer-server-client.crt", Subject: "CN=etcd-peer,O=k3s", Status: NotYetValid, Date: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d certificates, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestParseMessageSkipsWhatItCannotRead(t *testing.T) {
	for _, msg := range []string{
		"",
		"Node and Certificate Authority certificates managed by k3s are OK",
		"kubelet/client-kubelet.crt: certificate CN=x will expire within 120 days at tomorrow",
		"kubelet/client-kubelet.crt: certificate CN=x will expire soon",
	} {
		if got := ParseMessage(msg); len(got) != 0 {
			t.Errorf("%q: got %+v, want nothing", msg, got)
		}
	}
	// An aggregated Event (client-go's "(combined from similar events): ") still reads.
	got := ParseMessage("(combined from similar events): Certificate Authority certificates require attention - check k3s documentation and begin planning rotation: " +
		"server-ca/server-ca.crt: certificate CN=k3s-server-ca@1700000000 will expire within 365 days at 2027-06-01T00:00:00Z")
	if len(got) != 1 || got[0].File != "server-ca/server-ca.crt" || got[0].Subject != "CN=k3s-server-ca@1700000000" {
		t.Errorf("aggregated CA warning: got %+v", got)
	}
}
