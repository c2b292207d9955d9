package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRepo writes a repository with one package, pkg/a, whose tests are TestA and
// TestB and whose helpers are checkA (a func in a test file) and checkB (a method in
// a non-test file), and a non-test func TestNotATest.
func fakeRepo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"go.mod":              "module example.com/fake\n",
		"pkg/a/a_test.go":     "package a\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {}\nfunc TestB(t *testing.T) {}\nfunc checkA() {}\n",
		"pkg/a/a.go":          "package a\n\ntype s struct{}\n\nfunc (s) checkB() {}\nfunc TestNotATest() {}\n",
		"pkg/a/sub/b_test.go": "package sub\n\nimport \"testing\"\n\nfunc TestSub(t *testing.T) {}\n",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func row(status, provedBy string) Row {
	return Row{Line: 1, Cells: map[string]string{ColumnRule: "r", ColumnStatus: status, "how": "it is done", ColumnProvedBy: provedBy}}
}

func TestCheck(t *testing.T) {
	root := fakeRepo(t)
	for _, tc := range []struct {
		name string
		row  Row
		want []string // one substring per problem; none when the row is right
	}{
		{name: "existing tests and helpers", row: row("met", "`pkg/a TestA` (checkA), `TestB` (checkB)")},
		{name: "met without a test, saying so", row: row("met", "no test")},
		{name: "a row not met names no test", row: row("not met", "none (not implemented)")},
		{name: "a missing test", row: row("met", "`pkg/a TestA`, `TestC`"), want: []string{"no func TestC( in pkg/a/*_test.go"}},
		{name: "a func that is no test", row: row("met", "`pkg/a TestNotATest`"), want: []string{"no func TestNotATest("}},
		{name: "a test of a subdirectory", row: row("met", "`pkg/a TestSub`"), want: []string{"no func TestSub("}},
		{name: "a missing helper", row: row("met", "`pkg/a TestA` (checkC)"), want: []string{"helper checkC"}},
		{name: "a missing directory", row: row("met", "`pkg/b TestA`"), want: []string{"no package directory pkg/b"}},
		{name: "a directory outside the repository", row: row("met", "`../a TestA`"), want: []string{"not a directory inside the repository"}},
		{name: "tests are checked whatever the status", row: row("not applicable", "`pkg/a TestGone`"), want: []string{"no func TestGone("}},
		{name: "met, naming nothing", row: row("met", "the lifecycle test"), want: []string{`does not say "no test"`}},
		{name: "met but not implemented", row: Row{Line: 1, Cells: map[string]string{ColumnRule: "r", ColumnStatus: "met",
			"how": "Not implemented yet.", ColumnProvedBy: "`pkg/a TestA`"}}, want: []string{`"how" column says "not implemented"`}},
		{name: "met, naming nothing, not implemented", row: row("met", "none (not implemented)"),
			want: []string{`does not say "no test"`, `"proved by" column says "not implemented"`}},
		{name: "an unreadable cell", row: row("met", "`TestA`"), want: []string{"no package directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(root, []Row{tc.row})
			if len(got) != len(tc.want) {
				t.Fatalf("problems %q, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %q, want one saying %q", got[i], w)
				}
			}
		})
	}
}

func TestRepoRoot(t *testing.T) {
	root := fakeRepo(t)
	// A nested module with another name is walked past.
	if err := os.WriteFile(filepath.Join(root, "pkg", "go.mod"), []byte("module example.com/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := RepoRoot(filepath.Join(root, "pkg", "a", "sub"), "example.com/fake")
	if err != nil || got != root {
		t.Errorf("RepoRoot = %q, %v; want %q", got, err, root)
	}
	if _, err := RepoRoot(filepath.Join(root, "pkg"), "example.com/none"); err == nil {
		t.Error("no error for a module nowhere above")
	}
}
