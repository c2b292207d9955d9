package sim

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// installCommand is what a run of k3s's install script asks for.
type installCommand struct {
	// role is the k3s subcommand: server or agent.
	role string
	// version is INSTALL_K3S_VERSION.
	version string
	// skipDownload: the script keeps the k3s binary on disk and ignores version
	// (k3smodel.SkipsDownload).
	skipDownload bool
	// script is the path of the script run from a file ("" when piped: sh -s).
	script string
}

// parseInstallCommand recognises a command line that runs k3s's install script (piped
// from a download or from a file, the script's arguments after "sh -s -" or the script's
// path) and reads what it installs. A shell parser, because quoting decides what the
// script really receives. ok is false for commands that do not install k3s.
func parseInstallCommand(cmd string) (ic installCommand, ok bool, err error) {
	f, err := syntax.NewParser().Parse(strings.NewReader(cmd), "")
	if err != nil {
		// Not every command is for this parser (cloud-init's are sh); only those that
		// mention the install are ours to judge.
		if strings.Contains(cmd, "INSTALL_K3S_VERSION") {
			return ic, false, fmt.Errorf("k3s install command does not parse as shell: %w", err)
		}
		return ic, false, nil
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		call, isCall := n.(*syntax.CallExpr)
		if !isCall || ok || len(call.Args) == 0 || literal(call.Args[0]) != "sh" {
			return true
		}
		version, skip, readOnly := "", "", ""
		for _, a := range call.Assigns {
			if a.Value == nil {
				continue
			}
			switch a.Name.Value {
			case "INSTALL_K3S_VERSION":
				version = literal(a.Value)
			case "INSTALL_K3S_SKIP_DOWNLOAD":
				skip = literal(a.Value)
			case "INSTALL_K3S_BIN_DIR_READ_ONLY":
				readOnly = literal(a.Value)
			}
		}
		if version == "" {
			return true
		}
		role := literal(call.Args[len(call.Args)-1])
		if role != "server" && role != "agent" {
			err = fmt.Errorf("k3s install command ends in %q, not server or agent", role)
			return false
		}
		script := ""
		if len(call.Args) > 2 && literal(call.Args[1]) != "-s" {
			script = literal(call.Args[1])
		}
		ic, ok = installCommand{role: role, version: version, skipDownload: k3smodel.SkipsDownload(skip, readOnly), script: script}, true
		return false
	})
	return ic, ok, err
}

// literal is a word's value after quote removal, or "" if it holds expansions.
func literal(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				lit, isLit := q.(*syntax.Lit)
				if !isLit {
					return ""
				}
				b.WriteString(lit.Value)
			}
		default:
			return ""
		}
	}
	return b.String()
}
