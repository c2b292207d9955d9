package machinenaming

import (
	"regexp"
	"strings"
	"testing"
)

func TestGenerate(t *testing.T) {
	names := Names{Cluster: "prod", ControlPlane: "prod-cp"}
	for _, tc := range []struct {
		name, template string
		want           string // a regular expression the whole name matches
	}{
		{"default", "", `^prod-cp-[a-z0-9]{5}$`},
		{"cluster and random", "{{ .cluster.name }}-server-{{ .random }}", `^prod-server-[a-z0-9]{5}$`},
		{"control plane without spaces", "{{.kthreesControlPlane.name}}.{{.random}}", `^prod-cp\.[a-z0-9]{5}$`},
		// Over 63 characters: cut to 58 and given a random suffix.
		{"too long", strings.Repeat("a", 70) + "{{ .random }}", `^a{58}[a-z0-9]{5}$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Generate(tc.template, names)
			if err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(tc.want).MatchString(got) {
				t.Errorf("Generate = %q, want %s", got, tc.want)
			}
		})
	}
}

// Names differ from one Machine to the next, including cut ones.
func TestGenerateIsUnique(t *testing.T) {
	for _, tmpl := range []string{"", strings.Repeat("x", 60) + "-{{ .random }}"} {
		seen := map[string]bool{}
		for range 200 {
			name, err := Generate(tmpl, Names{Cluster: "c", ControlPlane: "cp"})
			if err != nil {
				t.Fatal(err)
			}
			if seen[name] {
				t.Fatalf("template %q gave %q twice", tmpl, name)
			}
			seen[name] = true
		}
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, template string
		want           string // substring of the error; "" means accepted
	}{
		{"default", DefaultTemplate, ""},
		{"empty means the default", "", ""},
		{"no spaces", "{{.cluster.name}}-{{.random}}", ""},
		{"random cut off by shortening", strings.Repeat("a", 60) + "{{ .random }}", ""},
		{"no random", "{{ .kthreesControlPlane.name }}-server", "must depend on {{ .random }}"},
		{"random only in a comment", "cp-{{/* .random */}}", "must depend on {{ .random }}"},
		{"trim markers", "{{- .cluster.name -}} - {{- .random }}", ""},
		{"comment", "{{/* the servers */}}{{ .cluster.name }}-{{ .random }}", ""},
		{"multibyte characters in a comment", "{{/*" + strings.Repeat("é", 200) + "*/}}{{ .random }}", ""},
		{"does not parse", "{{ .cluster.name }-{{ .random }}", "does not parse"},
		{"unknown variable", "{{ .machine.name }}-{{ .random }}", "cannot be rendered"},
		{"KCP's variable", "{{ .kubeadmControlPlane.name }}-{{ .random }}", "write {{ .kthreesControlPlane.name }}"},
		{"upper case", "CP-{{ .random }}", "not valid object names"},
		{"underscore", "cp_{{ .random }}", "not valid object names"},
		{"leading dash", "-{{ .random }}", "not valid object names"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.template)
			if tc.want == "" {
				if err != nil {
					t.Errorf("Check = %v, want accepted", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
