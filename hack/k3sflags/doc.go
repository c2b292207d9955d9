// Command k3sflags reads k3s's flag definitions (pkg/cli/cmds, at the upstream commits of
// the minors capk3s supports) from a git mirror of k3s and writes them as a Go table: each
// flag's name, aliases, value type, the subcommands (server, agent) that take it and the
// minors that have it. It is run by hand when a minor is added (make k3s-flags
// K3S_MIRROR=...), never by make generate or CI, which have no k3s source; its output is
// committed. The table is data only: how k3s reads config.yaml with it is written
// separately by each consumer (internal/k3s and test/sim/k3smodel).
package main
