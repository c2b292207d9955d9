package k3smodel

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 10, 8, 30, 15, 500, time.UTC)

const day = 24 * time.Hour

func longCAs(at time.Time) map[CAName]CA {
	cas := map[CAName]CA{}
	for _, f := range CAFiles {
		cas[f.CA] = GeneratedCA(f.CA, at)
	}
	return cas
}

func TestLeafLifetimeFrom(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]time.Duration{"": 365 * day, "30": 30 * day, "3650": 3650 * day, "ten": 365 * day} {
		if got := LeafLifetimeFrom(v); got != want {
			t.Errorf("LeafLifetimeFrom(%q) = %s, want %s", v, got, want)
		}
	}
}

func TestSignDatesAnHourBackUnlessTheCAIsYounger(t *testing.T) {
	t.Parallel()
	old := GeneratedCA(ClientCA, t0.Add(-day))
	l := Sign(LeafFiles(false, "n")[0], old, t0, LeafLifetime)
	wantNB := time.Date(2026, 1, 10, 7, 30, 15, 0, time.UTC)
	if !l.NotBefore.Equal(wantNB) || !l.NotAfter.Equal(wantNB.Add(365*day)) {
		t.Errorf("signed %s .. %s, want %s .. +365d", l.NotBefore, l.NotAfter, wantNB)
	}
	// A CA made at the same moment is valid from an hour back too; one made later
	// than that bounds the leaf's NotBefore.
	young := CA{Name: ClientCA, NotBefore: t0.Add(-10 * time.Minute).Truncate(time.Second)}
	l = Sign(LeafFiles(false, "n")[0], young, t0, LeafLifetime)
	if !l.NotBefore.Equal(young.NotBefore) || !l.NotAfter.Equal(young.NotBefore.Add(365*day)) {
		t.Errorf("signed under a young CA %s .. %s, want from the CA's NotBefore %s", l.NotBefore, l.NotAfter, young.NotBefore)
	}
}

func TestIssueAllCoversEveryMonitoredFile(t *testing.T) {
	t.Parallel()
	server := IssueAll(true, "s-0", longCAs(t0), t0, LeafLifetime)
	agent := IssueAll(false, "a-0", longCAs(t0), t0, LeafLifetime)
	if len(server) != 17 || len(agent) != 4 {
		t.Fatalf("%d server and %d agent certificates, want 17 and 4", len(server), len(agent))
	}
	var etcdPeer, kubelet bool
	for _, l := range server {
		etcdPeer = etcdPeer || l.Path == "server/tls/etcd/peer-server-client.crt" && l.CA == ETCDPeerCA
		kubelet = kubelet || l.Path == KubeletClientPath && l.Subject.String() == "CN=system:node:s-0,O=system:nodes"
	}
	if !etcdPeer || !kubelet {
		t.Errorf("server certificates lack the etcd peer (%v) or the kubelet client for s-0 (%v)", etcdPeer, kubelet)
	}
	for _, l := range agent {
		if !l.FromServer || !strings.HasPrefix(l.Path, "agent/") {
			t.Errorf("agent certificate %s: FromServer %v, want agent/ files signed by the server", l.Path, l.FromServer)
		}
	}
}

func TestRestartRenewsInsideTheWindowOnly(t *testing.T) {
	t.Parallel()
	cas := longCAs(t0)
	leaves := IssueAll(true, "s-0", cas, t0, LeafLifetime)
	expiry := leaves[0].NotAfter // t0 - 1h + 365d

	tests := []struct {
		name        string
		at          time.Time
		wantRenewed int
	}{
		// 165 days left: only the agent's certificates, which a server signs at
		// every start.
		{"200 days in", t0.Add(200 * day), 4},
		// Exactly 120 days left: IsCertExpired's "<=" renews.
		{"120 days left", expiry.Add(-120 * day), 17},
		{"120 days and a second left", expiry.Add(-120*day - time.Second), 4},
		{"300 days in", t0.Add(300 * day), 17},
		{"expired", expiry.Add(day), 17},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, renewed := Restart(leaves, cas, tt.at, LeafLifetime)
			if len(renewed) != tt.wantRenewed {
				t.Fatalf("renewed %d (%v), want %d", len(renewed), renewed, tt.wantRenewed)
			}
			for i, l := range got {
				was := leaves[i].NotAfter
				if l.FromServer || len(renewed) == 17 {
					if want := x509Time(tt.at.Add(-time.Hour)).Add(365 * day); !l.NotAfter.Equal(want) {
						t.Errorf("%s expires %s after the restart, want %s", l.Path, l.NotAfter, want)
					}
				} else if !l.NotAfter.Equal(was) {
					t.Errorf("%s changed from %s to %s outside the window", l.Path, was, l.NotAfter)
				}
			}
		})
	}
}

func TestAgentRestartRenewsAll(t *testing.T) {
	t.Parallel()
	cas := longCAs(t0)
	leaves := IssueAll(false, "a-0", cas, t0, LeafLifetime)
	got, renewed := Restart(leaves, cas, t0.Add(10*day), LeafLifetime)
	if len(renewed) != 4 || !Soonest(got).Equal(x509Time(t0.Add(10*day-time.Hour)).Add(365*day)) {
		t.Errorf("agent restart renewed %v, soonest %s", renewed, Soonest(got))
	}
}

func TestKubeletClientExpired(t *testing.T) {
	t.Parallel()
	leaves := IssueAll(false, "a-0", longCAs(t0), t0, LeafLifetime)
	expiry := Soonest(leaves)
	if KubeletClientExpired(leaves, expiry) {
		t.Error("expired at its NotAfter; x509 validity includes NotAfter")
	}
	if !KubeletClientExpired(leaves, expiry.Add(time.Second)) {
		t.Error("not expired a second after NotAfter")
	}
	if KubeletClientExpired(nil, expiry.Add(time.Hour)) {
		t.Error("a node without certificates counts as expired")
	}
}
