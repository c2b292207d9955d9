package layout

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// testTree is the import path prefix of the test-support packages.
const testTree = "github.com/capk3s/capk3s/test/"

// TestProductImportsNoTestSupport reads every non-test Go file of the product tree and
// fails on an import of "testing", or, under api/ and internal/, of a package under
// test/: such a file is test support and belongs under test/ (test files in internal/
// may import test/ packages). cmd/capk3s's sandbox runs the simulator by design, so
// cmd/ may import test/ but still not "testing".
func TestProductImportsNoTestSupport(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for tree, mayImportTestTree := range map[string]bool{"api": false, "internal": false, "cmd": true} {
		err := filepath.WalkDir(filepath.Join(root, tree), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			checked++
			rel, _ := filepath.Rel(root, path)
			for _, imp := range f.Imports {
				p, err := strconv.Unquote(imp.Path.Value)
				if err != nil {
					return err
				}
				if p == "testing" || (!mayImportTestTree && strings.HasPrefix(p, testTree)) {
					t.Errorf("%s imports %q: test support belongs under test/, imported by _test.go files only", rel, p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// A walk that found nothing (a wrong root) would pass without checking anything.
	if checked < 100 {
		t.Fatalf("read only %d product files under %s: wrong repository root?", checked, root)
	}
}
