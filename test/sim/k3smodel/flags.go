package k3smodel

import "slices"

// The k3s subcommands that read config.yaml, as the install script's last argument
// names them.
const (
	RoleServer = "server"
	RoleAgent  = "agent"
)

// k3sFlag is one row of flags_generated.go: a flag of `k3s server` and/or `k3s agent`
// as pkg/cli/cmds (server.go NewServerCommand, agent.go NewAgentCommand, and the shared
// flags of log.go, root.go, config.go) declares it, per minor. The table is extracted
// mechanically by hack/k3sflags from the commits in Minors; what k3s does with it is
// written by hand in configfile.go.
type k3sFlag struct {
	Name    string
	Aliases []string
	// Type is the urfave/cli flag kind: String, Bool, Int, StringSlice, Duration.
	Type   string
	Hidden bool
	// Server and Agent are the minors whose subcommand has the flag.
	Server, Agent []int
}

// flagFor finds the flag role's k3s of the minor has under name (its name or an
// alias: urfave/cli registers both with the parser).
func flagFor(minor int, role, name string) (k3sFlag, bool) {
	for _, f := range k3sFlags {
		if f.Name != name && !slices.Contains(f.Aliases, name) {
			continue
		}
		minors := f.Agent
		if role == RoleServer {
			minors = f.Server
		}
		if slices.Contains(minors, minor) {
			return f, true
		}
	}
	return k3sFlag{}, false
}

// HasFlag says whether role's k3s of the minor takes the flag name.
func HasFlag(minor int, role, name string) bool {
	_, ok := flagFor(minor, role, name)
	return ok
}
