package machinenaming

import (
	"errors"
	"fmt"
	"strings"
	"text/template/parse"
	"unicode/utf8"
)

// A template is parsed with text/template's own parser, so that it reads exactly as
// Cluster API's does (delimiters, "{{-" and "-}}" trimming, comments, parse errors),
// but it is never executed: text/template can loop ({{ range 1000000 }}), nest loops
// and call printf with any width, and one tenant's template would then take the
// memory and time of the manager that serves every cluster. Naming needs text and
// the three variables, so the parse tree may hold only those; it is rendered here
// by concatenation. The output is then bounded by the template: at most
// MaxTemplateLength characters (1 KiB) of text and, since the shortest action,
// {{.random}}, takes 10 characters, at most 25 variables of at most 253 characters
// each (object names), under 8 KiB in all.

// MaxTemplateLength is the longest template, the schema's bound on
// spec.machineNaming.template, kept here too so that no stored object that slipped
// past the schema can make rendering costly.
const MaxTemplateLength = 256

// allowed says what a template may contain; every refusal of its content names it.
const allowed = "a template may hold only text and variables, each alone in {{ }}, and the variables are .cluster.name, .kthreesControlPlane.name and .random"

// parseTemplate returns the parts of a template: text, and the variables as
// their names ("cluster.name", "kthreesControlPlane.name", "random"), in order.
func parseTemplate(tmpl string) ([]part, error) {
	// Characters, not bytes, as the schema counts them.
	if utf8.RuneCountInString(tmpl) > MaxTemplateLength {
		return nil, fmt.Errorf("is longer than %d characters", MaxTemplateLength)
	}
	tree := parse.New("machineNaming")
	// Functions are refused below with a message that says what is allowed, rather
	// than by the parser as undefined.
	tree.Mode = parse.SkipFuncCheck
	treeSet := map[string]*parse.Tree{}
	if _, err := tree.Parse(tmpl, "", "", treeSet); err != nil {
		return nil, fmt.Errorf("does not parse as a Go template: %w", err)
	}
	for _, t := range treeSet {
		if t != tree {
			return nil, notAllowed("{{ define }} or {{ block }} is not allowed")
		}
	}
	var parts []part
	for _, node := range tree.Root.Nodes {
		switch n := node.(type) {
		case *parse.TextNode:
			parts = append(parts, part{text: string(n.Text)})
		case *parse.ActionNode:
			name, err := variable(n.Pipe)
			if err != nil {
				return nil, err
			}
			parts = append(parts, part{variable: name})
		default:
			return nil, notAllowed(describe(node) + " is not allowed")
		}
	}
	return parts, nil
}

// part is one piece of a template: text, or the name of a variable.
type part struct {
	text, variable string
}

// variable returns the name of the variable an action writes, if that is all it does.
func variable(pipe *parse.PipeNode) (string, error) {
	if len(pipe.Decl) == 0 && len(pipe.Cmds) == 1 && len(pipe.Cmds[0].Args) == 1 {
		if field, ok := pipe.Cmds[0].Args[0].(*parse.FieldNode); ok {
			name := strings.Join(field.Ident, ".")
			switch {
			case name == "cluster.name", name == "kthreesControlPlane.name", name == "random":
				return name, nil
			case field.Ident[0] == "kubeadmControlPlane":
				return "", errors.New("uses .kubeadmControlPlane, which a KThreesControlPlane does not have: write {{ .kthreesControlPlane.name }} for the control plane's name")
			}
			return "", notAllowed("." + name + " is not a variable")
		}
	}
	return "", notAllowed("{{ " + pipe.String() + " }} is not allowed")
}

func notAllowed(what string) error {
	return fmt.Errorf("cannot be rendered: %s (%s)", what, allowed)
}

// describe names a node that is not text or an action by its keyword, rather than
// quoting a whole {{ range }} with its body.
func describe(node parse.Node) string {
	switch node.(type) {
	case *parse.RangeNode:
		return "{{ range }}"
	case *parse.IfNode:
		return "{{ if }}"
	case *parse.WithNode:
		return "{{ with }}"
	case *parse.TemplateNode:
		return "{{ template }}"
	case *parse.BreakNode:
		return "{{ break }}"
	case *parse.ContinueNode:
		return "{{ continue }}"
	}
	return fmt.Sprintf("%q", node.String())
}

// render writes a parsed template for the given values.
func render(parts []part, names Names, random string) string {
	values := map[string]string{"cluster.name": names.Cluster, "kthreesControlPlane.name": names.ControlPlane, "random": random}
	var b strings.Builder
	for _, p := range parts {
		if p.variable != "" {
			b.WriteString(values[p.variable])
		} else {
			b.WriteString(p.text)
		}
	}
	return b.String()
}
