package serverplan

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The control plane's decision packages (internal/controlplane/*plan) decide from
// plain inputs and are tested without an apiserver: none imports its parent (the
// reconciler), a client, or the test harness, and none has a TestMain that would
// start one. A table test that needs the apiserver belongs with the reconciler.
// Their tests may import one package from test/: the shared fixtures, which are held
// to the same rule (they are code those tests run).
func TestDecisionPackagesNeedNoAPIServer(t *testing.T) {
	dirs, err := filepath.Glob("../*plan")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 2 {
		t.Fatalf("decision packages found: %v; want at least restoreplan and serverplan", dirs)
	}
	for _, dir := range dirs {
		for _, file := range goFiles(t, dir) {
			allowed := ""
			if strings.HasSuffix(file, "_test.go") {
				allowed = fixturesPackage
			}
			for _, problem := range impurities(t, file, allowed) {
				t.Errorf("%s: %s", file, problem)
			}
		}
	}
	fixtures := goFiles(t, "../../../test/cpfixtures")
	if len(fixtures) == 0 {
		t.Fatal("no files in test/cpfixtures")
	}
	for _, file := range fixtures {
		for _, problem := range impurities(t, file, fixturesPackage) {
			t.Errorf("%s: %s", file, problem)
		}
	}
}

// fixturesPackage is the one package under test/ a decision test may import.
const fixturesPackage = "github.com/capk3s/capk3s/test/cpfixtures"

// forbidden are the import paths (and path prefixes) that need an apiserver, or that
// are the reconciler or the test harness; the parent is forbidden by itself only, its
// subpackages are checked in impurities.
var forbidden = []string{
	"github.com/capk3s/capk3s/internal/controlplane",
	"github.com/capk3s/capk3s/test/",
	"sigs.k8s.io/controller-runtime",
	"k8s.io/client-go",
	"sigs.k8s.io/cluster-api/controllers",
}

func goFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// impurities lists what in one Go file ties its package to an apiserver; allowed, when
// not empty, is one forbidden import the file may have.
func impurities(t *testing.T, file, allowed string) []string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), file, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		if path == allowed {
			continue
		}
		for _, bad := range forbidden {
			parent := bad == "github.com/capk3s/capk3s/internal/controlplane"
			if (parent && path == bad) || (!parent && strings.HasPrefix(path, bad)) {
				out = append(out, "imports "+path)
			}
		}
		// A sibling may be imported; anything else under the parent is the reconciler's.
		if rest, ok := strings.CutPrefix(path, "github.com/capk3s/capk3s/internal/controlplane/"); ok && !strings.HasSuffix(rest, "plan") {
			out = append(out, "imports "+path)
		}
	}
	for _, decl := range f.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "TestMain" {
			out = append(out, "has a TestMain")
		}
	}
	return out
}
