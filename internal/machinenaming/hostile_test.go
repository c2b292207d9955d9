package machinenaming

import (
	"runtime"
	"strings"
	"testing"
)

// hostileTemplates are templates a tenant could write to make the manager render
// without end or into gigabytes, or that reach past the variables. Each must be
// refused before anything is rendered, with a message that names what is allowed.
var hostileTemplates = []struct{ name, template, want string }{
	{"range over a number", "{{ range 1000 }}{{ $.random }}{{ end }}", "{{ range }} is not allowed"},
	{"range producing text", "{{ range 999999 }}a{{ end }}{{ .random }}", "{{ range }} is not allowed"},
	{"nested ranges", "{{ range 100000 }}{{ range 100000 }}{{ $.cluster.name }}{{ end }}{{ end }}{{ .random }}", "{{ range }} is not allowed"},
	{"if", "cp-{{ if .random }}{{ .random }}{{ end }}", "{{ if }} is not allowed"},
	{"if false hiding random", "cp-{{ if false }}{{ .random }}{{ end }}", "{{ if }} is not allowed"},
	{"with", "cp-{{ with .random }}{{ . }}{{ end }}", "{{ with }} is not allowed"},
	{"define and template", `{{ define "x" }}{{ .random }}{{ end }}cp-{{ template "x" . }}`, "{{ define }} or {{ block }} is not allowed"},
	{"template alone", `cp-{{ template "x" . }}{{ .random }}`, "{{ template }} is not allowed"},
	{"block", `cp-{{ block "x" . }}{{ .random }}{{ end }}`, "{{ define }} or {{ block }} is not allowed"},
	{"define of the template itself", `{{ define "machineNaming" }}{{ range 9 }}a{{ end }}{{ end }}`, "{{ define }} or {{ block }} is not allowed"},
	{"break", "{{ range 3 }}{{ break }}{{ end }}{{ .random }}", "{{ range }} is not allowed"},
	{"printf", `{{ printf "%s-%s" .cluster.name .random }}`, `{{ printf "%s-%s" .cluster.name .random }} is not allowed`},
	{"printf with a huge width", `{{ printf "%999999999d" 1 }}{{ .random }}`, "is not allowed"},
	{"len", "{{ len .random }}-{{ .random }}", "{{ len .random }} is not allowed"},
	{"index", `{{ index .cluster "name" }}-{{ .random }}`, "is not allowed"},
	{"call", "{{ call .random }}", "is not allowed"},
	{"unknown function", "{{ lower .cluster.name }}-{{ .random }}", "is not allowed"},
	{"pipeline", `{{ .cluster.name | printf "%s" }}-{{ .random }}`, "is not allowed"},
	{"variable declaration", "{{ $x := .random }}cp-{{ $x }}", "is not allowed"},
	{"variable", "cp-{{ $.random }}", "{{ $.random }} is not allowed"},
	{"constant", `{{ "cp" }}-{{ .random }}`, "is not allowed"},
	{"parenthesis", "{{ (.random) }}", "is not allowed"},
	{"whole map", "{{ .cluster }}-{{ .random }}", ".cluster is not a variable"},
	{"field of random", "{{ .random.x }}-{{ .random }}", ".random.x is not a variable"},
	{"dot", "cp-{{ . }}-{{ .random }}", "is not allowed"},
	{"too long", strings.Repeat("a", 300) + "{{ .random }}", "longer than 256 characters"},
	{"too long in multibyte characters", "{{/*" + strings.Repeat("é", 260) + "*/}}{{ .random }}", "longer than 256 characters"},
}

func TestCheckRefusesHostileTemplates(t *testing.T) {
	for _, tc := range hostileTemplates {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.template)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want an error with %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "too long") && !strings.Contains(err.Error(), "longer than") &&
				!strings.Contains(err.Error(), "the variables are .cluster.name, .kthreesControlPlane.name and .random") {
				t.Errorf("the error %q does not say what a template may contain", err)
			}
			if _, err := Generate(tc.template, Names{Cluster: "c", ControlPlane: "cp"}); err == nil {
				t.Errorf("Generate accepted a template Check refuses")
			}
		})
	}
}

// Refusing a hostile template costs next to nothing: it is refused from its parse
// tree, never executed. (Executing the first of these took hundreds of MiB.)
func TestCheckOfHostileTemplateAllocatesLittle(t *testing.T) {
	for _, tmpl := range []string{
		"{{ range 999999 }}{{ $.random }}{{ end }}",
		"{{ range 999999 }}a{{ end }}{{ .random }}",
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := Check(tmpl)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("Check(%q) accepted it", tmpl)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
			t.Errorf("Check(%q) allocated %d KiB, want under 1 MiB", tmpl, alloc>>10)
		}
	}
}

// What the variables render to is unchanged by trim markers and spacing.
func TestGenerateWithTrimMarkers(t *testing.T) {
	got, err := Generate("{{- .cluster.name -}} - {{- .random }}", Names{Cluster: "prod", ControlPlane: "prod-cp"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len("prod-")+randomLength || !strings.HasPrefix(got, "prod-") {
		t.Errorf("Generate = %q, want prod- and five random characters", got)
	}
}
