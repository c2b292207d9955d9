package k3s

import (
	"reflect"
	"strings"
	"testing"
)

func TestOptionMinors(t *testing.T) {
	t.Parallel()
	for version, want := range map[string]struct {
		minors  []int
		outside bool
	}{
		"":             {[]int{34, 35, 36}, false},
		"v1.35.4+k3s1": {[]int{35}, false},
		"1.34.1":       {[]int{34}, false},
		"v1.33.9+k3s1": {[]int{34}, true},
		"v1.38.0+k3s1": {[]int{36}, true},
	} {
		got, outside, err := OptionMinors(version)
		if err != nil || !reflect.DeepEqual(got, want.minors) || outside != want.outside {
			t.Errorf("OptionMinors(%q) = %v, %v, %v; want %v, %v", version, got, outside, err, want.minors, want.outside)
		}
	}
	if _, _, err := OptionMinors("latest"); err == nil {
		t.Error("OptionMinors accepted a version that is none")
	}
}

func TestCheckOptionType(t *testing.T) {
	t.Parallel()
	all := SupportedMinors()
	for _, tc := range []struct {
		role, key string
		value     any
		want      string // "" for accepted
	}{
		{RoleAgent, "lb-server-port", "abc", "takes a whole number"},
		{RoleAgent, "lb-server-port", "6444", ""},
		{RoleServer, "https-listen-port", []any{"1", "x"}, "takes a whole number"},
		{RoleAgent, "selinux", "yes", "takes a bool"},
		{RoleAgent, "selinux", true, ""},
		{RoleAgent, "selinux", "false", ""},
		{RoleServer, "etcd-s3-timeout", "5", "takes a duration"},
		{RoleServer, "etcd-s3-timeout", "5m", ""},
		{RoleAgent, "node-label", []any{"a=b"}, ""},
		{RoleAgent, "node-name", true, ""}, // a string flag takes "true"
	} {
		err := CheckOptionType(all, tc.role, tc.key, tc.value)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s %s=%v: err = %v, want %q", tc.role, tc.key, tc.value, err, tc.want)
		}
	}
}

func TestAliasOf(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{"s": "server", "t": "token", "d": "data-dir", "o": "write-kubeconfig", "server": "", "x": ""} {
		if got := AliasOf(key); got != want {
			t.Errorf("AliasOf(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestReservedNodeLabels(t *testing.T) {
	t.Parallel()
	got := ReservedNodeLabels([]string{
		"node-role.kubernetes.io/worker=true", "tier=web", "node.kubernetes.io/pool=a",
		"kubernetes.io/hostname=x", "foo.k8s.io/x=y,example.com/a=b", "node-role.kubernetes.io/worker=",
	})
	want := []string{"foo.k8s.io/x", "node-role.kubernetes.io/worker"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReservedNodeLabels = %v, want %v", got, want)
	}
}
