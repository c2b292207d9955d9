package machinenaming

import (
	"strings"
	"testing"
	"text/template"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzCheck feeds Check any string. Whatever it accepts, Generate must turn into a
// valid object name of at most 63 characters, and the name must be the one
// text/template itself renders from the template (so that accepted templates mean
// what they mean to Cluster API). Refusals must come without rendering: the seeds
// include templates that text/template would take gigabytes to execute.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"", DefaultTemplate, "{{ .cluster.name }}-server-{{ .random }}", "{{.kthreesControlPlane.name}}.{{.random}}",
		"{{- .cluster.name -}} - {{- .random }}", "{{/* c */}}cp-{{ .random }}", strings.Repeat("a", 60) + "{{ .random }}",
		"{{ .kubeadmControlPlane.name }}-{{ .random }}", "{{ .cluster.name }", "Server_{{ .random }}",
	} {
		f.Add(s)
	}
	for _, h := range hostileTemplates {
		f.Add(h.template)
	}
	names := Names{Cluster: "c", ControlPlane: "a-control.plane"}
	f.Fuzz(func(t *testing.T, tmpl string) {
		if err := Check(tmpl); err != nil {
			return
		}
		name, err := Generate(tmpl, names)
		if err != nil {
			t.Fatalf("Check accepted %q, Generate refused it: %v", tmpl, err)
		}
		if len(name) > maxNameLength {
			t.Fatalf("Generate(%q) = %q, longer than %d characters", tmpl, name, maxNameLength)
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Fatalf("Generate(%q) = %q, not an object name: %v", tmpl, name, errs)
		}
		parts, err := parseTemplate(orDefault(tmpl))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := render(parts, names, "bbbbb"), executeTemplate(t, orDefault(tmpl), names, "bbbbb"); got != want {
			t.Fatalf("template %q renders %q, text/template renders %q", tmpl, got, want)
		}
	})
}

// executeTemplate renders a template with text/template, as Cluster API does. Only
// for templates Check accepted: those hold no loops.
func executeTemplate(t *testing.T, tmpl string, names Names, random string) string {
	t.Helper()
	parsed, err := template.New("machineNaming").Option("missingkey=error").Parse(tmpl)
	if err != nil {
		t.Fatalf("text/template refuses %q, which Check accepted: %v", tmpl, err)
	}
	var b strings.Builder
	data := map[string]any{
		"cluster":             map[string]any{"name": names.Cluster},
		"kthreesControlPlane": map[string]any{"name": names.ControlPlane},
		"random":              random,
	}
	if err := parsed.Execute(&b, data); err != nil {
		t.Fatalf("text/template cannot render %q, which Check accepted: %v", tmpl, err)
	}
	return b.String()
}
