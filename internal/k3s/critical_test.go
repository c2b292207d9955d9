package k3s

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestCriticalChanges(t *testing.T) {
	base := map[string]any{"disable-cloud-controller": true, "disable": []string{"traefik"}}
	for _, tc := range []struct {
		name    string
		updated map[string]any
		want    []string
	}{
		{"unchanged", map[string]any{"disable-cloud-controller": true, "disable": []string{"traefik"}}, nil},
		{"defaults spelled out", map[string]any{"disable-cloud-controller": "true", "disable": "traefik",
			"flannel-backend": "vxlan", "egress-selector-mode": "agent", "secrets-encryption": false,
			"secrets-encryption-provider": "aescbc", "cluster-domain": "cluster.local"}, nil},
		{"non-critical component", map[string]any{"disable-cloud-controller": true, "disable": []string{"traefik", "local-storage"}}, nil},
		{"servicelb", map[string]any{"disable-cloud-controller": true, "disable": []string{"traefik", "servicelb"}}, []string{"disable servicelb"}},
		{"servicelb appended", map[string]any{"disable-cloud-controller": true, "disable": "traefik", "disable+": []any{"servicelb"}}, []string{"disable servicelb"}},
		{"cloud controller", map[string]any{"disable": []string{"traefik"}}, []string{"disable-cloud-controller"}},
		{"flannel and encryption", map[string]any{"disable-cloud-controller": true, "disable": []string{"traefik"},
			"flannel-backend": "host-gw", "secrets-encryption": true}, []string{"secrets-encryption", "flannel-backend"}},
		{"numbers and lists", map[string]any{"disable-cloud-controller": true, "disable": []string{"traefik"},
			"cluster-cidr": []any{"10.42.0.0/16", "fd00:42::/56"}, "supervisor-metrics": json.Number("1")}, []string{"cluster-cidr", "supervisor-metrics"}},
	} {
		var got []string
		for _, c := range CriticalChanges(base, tc.updated) {
			got = append(got, c.Option)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: changes %v, want %v", tc.name, got, tc.want)
		}
	}
	c := CriticalChanges(map[string]any{}, map[string]any{"flannel-backend": "wireguard-native"})
	if len(c) != 1 || c[0].String() != "flannel-backend (vxlan, now wireguard-native)" {
		t.Errorf("changes %v", c)
	}
}

func TestIsCriticalOption(t *testing.T) {
	for key, want := range map[string]bool{
		"flannel-backend": true, "embedded-registry": true, "disable+": true, "secrets-encryption-provider": true,
		"node-ip": false, "etcd-arg": false, "disable-kube-proxy": false, "servicelb-namespace": false,
	} {
		if got := IsCriticalOption(key); got != want {
			t.Errorf("IsCriticalOption(%q) = %v", key, got)
		}
	}
	for _, o := range criticalOptions {
		if !ServerOnlyOption(o.name) {
			t.Errorf("critical option %s is not a k3s server option", o.name)
		}
	}
}
