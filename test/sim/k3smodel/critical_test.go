package k3smodel

import (
	"slices"
	"strings"
	"testing"
)

func criticalOf(t *testing.T, options map[string]any) Critical {
	t.Helper()
	c, err := CriticalOf(Minors[len(Minors)-1], options)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCriticalDefaultsEqualAbsentKeys(t *testing.T) {
	for _, m := range Minors {
		absent, err := CriticalOf(m, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		spelled, err := CriticalOf(m, map[string]any{
			"flannel-backend": "vxlan", "egress-selector-mode": "agent", "cluster-domain": "cluster.local",
			"secrets-encryption-provider": "aescbc", "secrets-encryption": false,
			"cluster-cidr": "10.42.0.0/16", "service-cidr": "10.43.0.0/16", "cluster-dns": "10.43.0.10",
			"disable": []any{"traefik", "metrics-server"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := spelled.Mismatched(absent); len(got) != 0 {
			t.Errorf("v1.%d: k3s's defaults spelled out differ from absent keys in %v", m.Number, got)
		}
	}
}

func TestCriticalMismatches(t *testing.T) {
	cluster := criticalOf(t, map[string]any{"disable-cloud-controller": true, "disable": []any{"servicelb"}})
	for _, tc := range []struct {
		name    string
		options map[string]any
		want    []string
	}{
		{"same", map[string]any{"disable-cloud-controller": "true", "disable": "traefik, servicelb"}, nil},
		{"servicelb deployed", map[string]any{"disable-cloud-controller": true, "disable": []any{"traefik"}}, []string{"disable-service-lb"}},
		{"cloud controller", map[string]any{"disable": []any{"servicelb"}}, []string{"disable-cloud-controller"}},
		{"flannel backend", map[string]any{"disable-cloud-controller": true, "disable": []any{"servicelb"}, "flannel-backend": "host-gw"}, []string{"flannel-backend"}},
		{"secrets encryption and registry", map[string]any{"disable-cloud-controller": true, "disable+": []any{"servicelb"},
			"secrets-encryption": true, "embedded-registry": true}, []string{"embedded-registry", "secrets-encryption"}},
		{"service cidr moves the dns default", map[string]any{"disable-cloud-controller": true, "disable": []any{"servicelb"},
			"service-cidr": "10.96.0.0/16"}, []string{"cluster-dns", "service-cidr"}},
		// Only servicelb of the disable list is critical; traefik and the others are not.
		{"other components", map[string]any{"disable-cloud-controller": true, "disable": []any{"servicelb", "traefik", "local-storage"}}, nil},
	} {
		got := criticalOf(t, tc.options).Mismatched(cluster)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: mismatched %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCriticalDerivedValues(t *testing.T) {
	c := criticalOf(t, map[string]any{"service-cidr": "10.96.0.0/12,fd00:96::/108", "cluster-cidr": "10.244.7.0/16"})
	if c["cluster-dns"] != "10.96.0.10,fd00:96::a" {
		t.Errorf("cluster-dns = %q", c["cluster-dns"])
	}
	if c["cluster-cidr"] != "10.244.0.0/16" {
		t.Errorf("cluster-cidr = %q, want the network k3s parses", c["cluster-cidr"])
	}
}

func TestCriticalRefusesWhatK3sCannotRead(t *testing.T) {
	for _, options := range []map[string]any{
		{"secrets-encryption": "yes please"},
		{"cluster-cidr": "10.42.0.0"},
		{"cluster-dns": "ten"},
	} {
		if _, err := CriticalOf(Minors[0], options); err == nil {
			t.Errorf("%v accepted", options)
		}
	}
	if _, err := CriticalOf(Minor{Number: 31}, nil); err == nil || !strings.Contains(err.Error(), "v1.31") {
		t.Errorf("an unplayed minor gave %v", err)
	}
}
