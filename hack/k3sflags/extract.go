package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"sort"
	"strconv"
	"strings"
)

// cliFlag is one urfave/cli flag as k3s declares it.
type cliFlag struct {
	Name    string
	Aliases []string
	Type    string // the urfave/cli flag kind without "Flag": String, Bool, Int, StringSlice, Duration...
	Hidden  bool
}

// extractor reads pkg/cli/cmds of one k3s commit.
type extractor struct {
	mirror, commit string
	vars           map[string]ast.Expr // package-level variables, by name
	funcs          map[string]*ast.FuncDecl
}

const cmdsDir = "pkg/cli/cmds"

func (x *extractor) git(args ...string) (string, error) {
	out, err := exec.Command("git", append([]string{"--git-dir", x.mirror}, args...)...).Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// load parses the Linux build of the package: k3s runs on Linux, so files built only for
// other systems (windows, or the !linux fallbacks) are skipped.
func (x *extractor) load() error {
	list, err := x.git("ls-tree", "--name-only", x.commit, cmdsDir+"/")
	if err != nil {
		return err
	}
	x.vars, x.funcs = map[string]ast.Expr{}, map[string]*ast.FuncDecl{}
	fset := token.NewFileSet()
	for _, path := range strings.Fields(list) {
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			strings.HasSuffix(path, "_windows.go") || strings.HasSuffix(path, "_default.go") {
			continue
		}
		src, err := x.git("show", x.commit+":"+path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return fmt.Errorf("%s at %s: %w", path, x.commit, err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					vs, ok := s.(*ast.ValueSpec)
					if !ok || d.Tok != token.VAR {
						continue
					}
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							x.vars[n.Name] = vs.Values[i]
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv == nil {
					x.funcs[d.Name.Name] = d
				}
			}
		}
	}
	return nil
}

// commandFlags returns the flags of the cli.Command the constructor fn builds.
func (x *extractor) commandFlags(fn string) ([]cliFlag, error) {
	decl := x.funcs[fn]
	if decl == nil {
		return nil, fmt.Errorf("%s: no func %s", x.commit, fn)
	}
	var flagsExpr ast.Expr
	ast.Inspect(decl, func(n ast.Node) bool {
		if kv, ok := n.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Flags" && flagsExpr == nil {
				flagsExpr = kv.Value
			}
		}
		return flagsExpr == nil
	})
	if flagsExpr == nil {
		return nil, fmt.Errorf("%s: %s sets no Flags", x.commit, fn)
	}
	return x.flagList(flagsExpr)
}

// flagList resolves a []cli.Flag expression: a literal, a variable holding one, or
// append() of those.
func (x *extractor) flagList(e ast.Expr) ([]cliFlag, error) {
	switch e := e.(type) {
	case *ast.Ident:
		v, ok := x.vars[e.Name]
		if !ok {
			return nil, fmt.Errorf("%s: flag list %s not found", x.commit, e.Name)
		}
		return x.flagList(v)
	case *ast.CompositeLit:
		var out []cliFlag
		for _, el := range e.Elts {
			f, err := x.oneFlag(el)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		}
		return out, nil
	case *ast.CallExpr:
		if id, ok := e.Fun.(*ast.Ident); ok && id.Name == "append" {
			var out []cliFlag
			for i, a := range e.Args {
				if i == 0 {
					l, err := x.flagList(a)
					if err != nil {
						return nil, err
					}
					out = append(out, l...)
					continue
				}
				f, err := x.oneFlag(a)
				if err != nil {
					return nil, err
				}
				out = append(out, f)
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("%s: cannot read flag list %T", x.commit, e)
}

// oneFlag reads &cli.XFlag{Name: ..., Aliases: ..., Hidden: ...} or a variable holding it.
func (x *extractor) oneFlag(e ast.Expr) (cliFlag, error) {
	if id, ok := e.(*ast.Ident); ok {
		v, ok := x.vars[id.Name]
		if !ok {
			return cliFlag{}, fmt.Errorf("%s: flag %s not found", x.commit, id.Name)
		}
		return x.oneFlag(v)
	}
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = u.X
	}
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return cliFlag{}, fmt.Errorf("%s: flag is a %T, not a literal", x.commit, e)
	}
	sel, ok := lit.Type.(*ast.SelectorExpr)
	if !ok || !strings.HasSuffix(sel.Sel.Name, "Flag") {
		return cliFlag{}, fmt.Errorf("%s: flag of unknown type", x.commit)
	}
	f := cliFlag{Type: strings.TrimSuffix(sel.Sel.Name, "Flag")}
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		switch kv.Key.(*ast.Ident).Name {
		case "Name":
			s, err := x.str(kv.Value)
			if err != nil {
				return cliFlag{}, err
			}
			f.Name = s
		case "Aliases":
			cl, ok := kv.Value.(*ast.CompositeLit)
			if !ok {
				return cliFlag{}, fmt.Errorf("%s: %s: aliases not a literal", x.commit, f.Name)
			}
			for _, a := range cl.Elts {
				s, err := x.str(a)
				if err != nil {
					return cliFlag{}, err
				}
				f.Aliases = append(f.Aliases, s)
			}
		case "Hidden":
			if id, ok := kv.Value.(*ast.Ident); ok && id.Name == "true" {
				f.Hidden = true
			}
		}
	}
	if f.Name == "" {
		return cliFlag{}, fmt.Errorf("%s: a %s flag without a literal name", x.commit, f.Type)
	}
	sort.Strings(f.Aliases)
	return f, nil
}

func (x *extractor) str(e ast.Expr) (string, error) {
	if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
		return strconv.Unquote(b.Value)
	}
	return "", fmt.Errorf("%s: a flag name that is not a string literal", x.commit)
}
