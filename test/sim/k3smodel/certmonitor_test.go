package k3smodel

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestCertCheckOKOnlyAtTheFirstCheck(t *testing.T) {
	t.Parallel()
	cas := longCAs(t0)
	c := CertCheck{Server: true, Leaves: IssueAll(true, "s-0", cas, t0, LeafLifetime), CAs: cas, Now: t0.Add(time.Minute), First: true}
	want := []CertEvent{{EventNormal, CertificateExpirationOK, "Node and Certificate Authority certificates managed by k3s are OK"}}
	if got := c.Events(); !reflect.DeepEqual(got, want) {
		t.Errorf("first check = %v, want %v", got, want)
	}
	c.First = false
	if got := c.Events(); len(got) != 0 {
		t.Errorf("later check = %v, want no Event", got)
	}
}

func TestCertCheckWarnsAnAgentInTheWindow(t *testing.T) {
	t.Parallel()
	cas := longCAs(t0)
	leaves := IssueAll(false, "a-0", cas, t0, LeafLifetime)
	at := "2027-01-10T07:30:15Z" // t0 - 1h + 365d
	c := CertCheck{Leaves: leaves, CAs: cas, Now: t0.Add(300 * day), First: true}
	want := []CertEvent{{EventWarning, CertificateExpirationWarning,
		"Node certificates require attention - restart k3s on this node to trigger automatic rotation: " +
			"k3s-controller/client-k3s-controller.crt: certificate CN=system:k3s-controller will expire within 120 days at " + at + "\n" +
			"kube-proxy/client-kube-proxy.crt: certificate CN=system:kube-proxy will expire within 120 days at " + at + "\n" +
			"kubelet/client-kubelet.crt: certificate CN=system:node:a-0,O=system:nodes will expire within 120 days at " + at + "\n" +
			"kubelet/serving-kubelet.crt: certificate CN=a-0 will expire within 120 days at " + at}}
	if got := c.Events(); !reflect.DeepEqual(got, want) {
		t.Errorf("Events =\n%v\nwant\n%v", got, want)
	}
	c.Now = t0.Add(400 * day)
	got := c.Events()
	if len(got) != 1 || !strings.Contains(got[0].Message, "kubelet/client-kubelet.crt: certificate CN=system:node:a-0,O=system:nodes expired at "+at) {
		t.Errorf("after expiry Events = %v, want the kubelet client certificate expired at %s", got, at)
	}
}

func TestCertCheckCAs(t *testing.T) {
	t.Parallel()
	cas := longCAs(t0)
	// capk3s's server CA with 200 days left: the server's CA check warns (365
	// days), the leaf files do not (120 days), and an agent says nothing.
	serverCA := CA{Name: ServerCA, Subject: subject("kubernetes"), NotBefore: t0.Add(-day), NotAfter: time.Date(2026, 7, 29, 0, 0, 0, 0, time.UTC)}
	cas[ServerCA] = serverCA
	server := CertCheck{Server: true, Leaves: IssueAll(true, "s-0", cas, t0, LeafLifetime), CAs: cas, Now: t0, First: true}
	want := []CertEvent{{EventWarning, CACertificateExpirationWarning,
		"Certificate Authority certificates require attention - check k3s documentation and begin planning rotation: " +
			"certificate-authority/server-ca.crt: certificate CN=kubernetes will expire within 365 days at 2026-07-29T00:00:00Z"}}
	if got := server.Events(); !reflect.DeepEqual(got, want) {
		t.Errorf("server Events = %v, want %v", got, want)
	}
	agent := CertCheck{Leaves: IssueAll(false, "a-0", cas, t0, LeafLifetime), CAs: cas, Now: t0, First: true}
	if got := agent.Events(); len(got) != 1 || got[0].Reason != CertificateExpirationOK {
		t.Errorf("agent Events = %v, want only OK: agents check no CA file", got)
	}
	// Inside 120 days the CA is listed under each leaf file it signed, on agents too.
	agent.Now = serverCA.NotAfter.Add(-100 * day)
	got := agent.Events()
	if len(got) != 1 || got[0].Reason != CertificateExpirationWarning ||
		!strings.Contains(got[0].Message, "kubelet/serving-kubelet.crt: certificate CN=kubernetes will expire within 120 days at 2026-07-29T00:00:00Z") ||
		strings.Contains(got[0].Message, "client-kubelet.crt: certificate CN=kubernetes") {
		t.Errorf("agent Events with the server CA in 120 days = %v", got)
	}
}

func TestCertCheckNotYetValid(t *testing.T) {
	t.Parallel()
	cas := longCAs(t0)
	leaves := IssueAll(false, "a-0", cas, t0, LeafLifetime)
	c := CertCheck{Leaves: leaves[:1], Now: t0.Add(-2 * time.Hour)}
	got := c.Events()
	if len(got) != 1 || !strings.HasSuffix(got[0].Message, "kube-proxy/client-kube-proxy.crt: certificate CN=system:kube-proxy is not valid before 2026-01-10T07:30:15Z") {
		t.Errorf("Events = %v", got)
	}
}
