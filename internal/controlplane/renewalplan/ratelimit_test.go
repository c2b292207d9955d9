package renewalplan

import (
	"strings"
	"testing"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

func TestParseReplacement(t *testing.T) {
	r := Replacement{Machine: "cp-1", At: renewalNow}
	got, ok := ParseReplacement(r.String())
	if !ok || got.Machine != "cp-1" || !got.At.Equal(renewalNow) {
		t.Errorf("round trip of %q: %+v, %v", r.String(), got, ok)
	}
	for _, v := range []string{"", "cp-1", "yesterday cp-1", rfc(renewalNow) + " "} {
		if _, ok := ParseReplacement(v); ok {
			t.Errorf("%q parsed", v)
		}
	}
}

func TestReplaceAllowed(t *testing.T) {
	a := certMachine("a", true, renewalNow.Add(9*day), time.Time{}, nil)
	b := certMachine("b", true, renewalNow.Add(3*day), time.Time{}, nil)
	c := certMachine("c", true, renewalNow.Add(3*day), time.Time{}, nil)
	due := []*clusterv1.Machine{a, c, b}
	cases := []struct {
		name    string
		last    Replacement
		hasLast bool
		due     []*clusterv1.Machine
		allowed string
		write   bool
		next    time.Time
	}{
		{"nothing due", Replacement{}, false, nil, "", false, time.Time{}},
		{"no replacement yet: the soonest expiry, then the name", Replacement{}, false, due, "b", true, time.Time{}},
		{"the one under way stays the one", Replacement{Machine: "a", At: renewalNow.Add(-time.Hour)}, true, due, "a", false, time.Time{}},
		{"the last one gone an hour ago: the others wait the interval", Replacement{Machine: "old", At: renewalNow.Add(-time.Hour)}, true, due,
			"", false, renewalNow.Add(-time.Hour).Add(ReplaceInterval)},
		{"the interval passed: the next", Replacement{Machine: "old", At: renewalNow.Add(-ReplaceInterval)}, true, due, "b", true, time.Time{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			allowed, write, next := ReplaceAllowed(tc.last, tc.hasLast, tc.due, renewalNow)
			if allowed != tc.allowed || write != tc.write || !next.Equal(tc.next) {
				t.Errorf("got (%q, %v, %s), want (%q, %v, %s)", allowed, write, next, tc.allowed, tc.write, tc.next)
			}
		})
	}
}

func TestHeldMessage(t *testing.T) {
	a := certMachine("a", true, renewalNow.Add(9*day), time.Time{}, nil)
	b := certMachine("b", true, renewalNow.Add(3*day), time.Time{}, nil)
	next := renewalNow.Add(5 * time.Hour)
	got := HeldMessage([]*clusterv1.Machine{b, a}, "", next)
	for _, want := range []string{"a, b wait", "not before " + rfc(next), controlplanev1.CertificatesReplacementAnnotation, "every 24h0m0s"} {
		if !strings.Contains(got, want) {
			t.Errorf("message %q lacks %q", got, want)
		}
	}
	if got := HeldMessage([]*clusterv1.Machine{b, a}, "b", time.Time{}); !strings.Contains(got, "a wait") || !strings.Contains(got, "after b's replacement") {
		t.Errorf("one under way: %q", got)
	}
	if got := HeldMessage([]*clusterv1.Machine{b}, "b", time.Time{}); got != "" {
		t.Errorf("none held: %q", got)
	}
}
