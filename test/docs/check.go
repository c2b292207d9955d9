package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// StatusMet is the status of a rule capk3s meets.
const StatusMet = "met"

// Check returns what is wrong with the checklist rows, for the repository at root:
//   - every test a row names (any status) must be a func of that name, without
//     receiver, in a _test.go file of that directory, and every helper a func (or
//     method) in a .go file of it;
//   - a row whose status is met names at least one test, or says "no test";
//   - a row whose status is met does not say "not implemented".
func Check(root string, rows []Row) []string {
	funcs := funcIndex{root: root, dirs: map[string]dirFuncs{}}
	var problems []string
	for _, row := range rows {
		where := fmt.Sprintf("line %d (%s)", row.Line, row.Cells[ColumnRule])
		provedBy := row.Cells[ColumnProvedBy]
		refs, err := ParseProvedBy(provedBy)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", where, err))
		}
		for _, ref := range refs {
			problems = append(problems, funcs.missing(where, ref)...)
		}
		if strings.ToLower(strings.TrimSpace(row.Cells[ColumnStatus])) != StatusMet {
			continue
		}
		if err == nil && len(refs) == 0 && !strings.Contains(strings.ToLower(provedBy), "no test") {
			problems = append(problems, where+": met, but names no test and does not say \"no test\"")
		}
		for _, col := range slices.Sorted(maps.Keys(row.Cells)) {
			if strings.Contains(strings.ToLower(row.Cells[col]), "not implemented") {
				problems = append(problems, fmt.Sprintf("%s: met, but its %q column says \"not implemented\"", where, col))
			}
		}
	}
	return problems
}

// dirFuncs are the funcs of one package directory: tests (no receiver, in _test.go
// files) and every func or method name.
type dirFuncs struct {
	err   error
	tests map[string]bool
	all   map[string]bool
}

type funcIndex struct {
	root string
	dirs map[string]dirFuncs
}

func (x funcIndex) missing(where string, ref Ref) []string {
	d := x.dir(ref.Dir)
	if d.err != nil {
		return []string{fmt.Sprintf("%s: `%s %s`: %v", where, ref.Dir, ref.Test, d.err)}
	}
	var out []string
	if !d.tests[ref.Test] {
		out = append(out, fmt.Sprintf("%s: `%s %s`: no func %s( in %s/*_test.go", where, ref.Dir, ref.Test, ref.Test, ref.Dir))
	}
	for _, h := range ref.Helpers {
		if !d.all[h] {
			out = append(out, fmt.Sprintf("%s: helper %s (of %s): no func %s in %s", where, h, ref.Test, h, ref.Dir))
		}
	}
	return out
}

func (x funcIndex) dir(rel string) dirFuncs {
	if d, ok := x.dirs[rel]; ok {
		return d
	}
	d := readDir(x.root, rel)
	x.dirs[rel] = d
	return d
}

// readDir parses the declarations of the .go files in root/rel (not its
// subdirectories). It does not type-check or build them.
func readDir(root, rel string) dirFuncs {
	d := dirFuncs{tests: map[string]bool{}, all: map[string]bool{}}
	if !filepath.IsLocal(rel) {
		d.err = fmt.Errorf("%q is not a directory inside the repository", rel)
		return d
	}
	entries, err := os.ReadDir(filepath.Join(root, rel))
	if err != nil {
		d.err = fmt.Errorf("no package directory %s: %w", rel, err)
		return d
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, rel, name), nil, parser.SkipObjectResolution)
		if err != nil {
			d.err = fmt.Errorf("parsing %s/%s: %w", rel, name, err)
			return d
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			d.all[fn.Name.Name] = true
			if fn.Recv == nil && strings.HasSuffix(name, "_test.go") {
				d.tests[fn.Name.Name] = true
			}
		}
	}
	return d
}

// RepoRoot walks up from dir to the directory whose go.mod declares module.
func RepoRoot(dir, module string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && declaresModule(string(data), module) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory", module)
		}
		dir = parent
	}
}

func declaresModule(gomod, module string) bool {
	for l := range strings.SplitSeq(gomod, "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "module" && strings.Trim(f[1], `"`) == module {
			return true
		}
	}
	return false
}
