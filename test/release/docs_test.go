package release

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/yamlprocessor"
)

// variableRow matches a documentation table row that documents a variable: its
// first cell is the name in backticks.
var variableRow = regexp.MustCompile("(?m)^\\|\\s*`([A-Z][A-Z0-9_]*)`\\s*\\|.*$")

// documentedVariables maps each variable documented in the Markdown file to its row.
func documentedVariables(t *testing.T, file string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, m := range variableRow.FindAllStringSubmatch(string(data), -1) {
		rows[m[1]] = m[0]
	}
	return rows
}

// usedVariables reads files' variables as clusterctl does, with their defaults
// (nil: none). A variable with different defaults in two files is an error.
func usedVariables(t *testing.T, files []string) map[string]*string {
	t.Helper()
	used := map[string]*string{}
	p := yamlprocessor.NewSimpleProcessor()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		vars, err := p.GetVariableMap(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for name, def := range vars {
			if prev, ok := used[name]; ok && !equalDefaults(prev, def) {
				t.Errorf("%s: ${%s} has another default than in an earlier file", filepath.Base(f), name)
			}
			used[name] = def
		}
	}
	return used
}

func equalDefaults(a, b *string) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// variableProblems compares the variables files use with those a page documents:
// each used variable needs a row that shows its default, and each row a use.
func variableProblems(used map[string]*string, documented map[string]string, page string) []string {
	var problems []string
	for name, def := range used {
		row, ok := documented[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("${%s} is not documented in %s", name, page))
		case def != nil && *def != "" && !strings.Contains(row, "`"+*def+"`"):
			problems = append(problems, fmt.Sprintf("%s does not give ${%s}'s default `%s`", page, name, *def))
		}
	}
	for name := range documented {
		if _, ok := used[name]; !ok {
			problems = append(problems, fmt.Sprintf("%s documents %s, which nothing uses", page, name))
		}
	}
	slices.Sort(problems)
	return problems
}

// TestVariablesAreDocumented requires every variable of the published templates to be
// in docs/templates.md and every variable of the components files in docs/install.md,
// with their defaults, and neither page to document a variable that is not used.
func TestVariablesAreDocumented(t *testing.T) {
	root := repoRoot(t)
	release := buildRelease(t)
	templates, err := filepath.Glob(filepath.Join(release, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var tmpl, components []string
	for _, f := range templates {
		switch {
		case strings.HasSuffix(f, "-components.yaml"):
			components = append(components, f)
		case filepath.Base(f) != "metadata.yaml":
			tmpl = append(tmpl, f)
		}
	}
	if len(tmpl) < len(flavors) || len(components) != 2 {
		t.Fatalf("release holds templates %v and components %v", tmpl, components)
	}
	for page, files := range map[string][]string{"docs/templates.md": tmpl, "docs/install.md": components} {
		for _, p := range variableProblems(usedVariables(t, files), documentedVariables(t, filepath.Join(root, page)), page) {
			t.Error(p)
		}
	}
}

// TestVariableProblems shows that the check above catches an undocumented variable, a
// wrong default and a stale row.
func TestVariableProblems(t *testing.T) {
	def := func(s string) *string { return &s }
	used := map[string]*string{"CLUSTER_NAME": nil, "POD_CIDR": def("10.42.0.0/16"), "SURPRISE": def("x")}
	documented := map[string]string{
		"CLUSTER_NAME": "| `CLUSTER_NAME` | all | | the name |",
		"POD_CIDR":     "| `POD_CIDR` | all | `10.0.0.0/8` | pods |",
		"GONE":         "| `GONE` | all | | removed |",
	}
	got := variableProblems(used, documented, "page.md")
	want := []string{
		"${SURPRISE} is not documented in page.md",
		"page.md documents GONE, which nothing uses",
		"page.md does not give ${POD_CIDR}'s default `10.42.0.0/16`",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
