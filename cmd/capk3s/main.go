// Command capk3s is the project's command-line tool. Its subcommands:
//
//	capk3s render -f kthreesconfig.yaml [--role server-init|server-join|agent] [--endpoint host:port]
//	capk3s sandbox [--exit-when-ready] [--dir .sandbox]
//
// render prints, offline, the cloud-config a machine would boot from, with
// placeholders where the cluster's secrets go. sandbox runs a management plane,
// Cluster API, both capk3s providers and the k3s simulator in this process, and
// brings up a demo cluster (see the README's quick start).
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run dispatches to a subcommand and returns the process exit code: 0 done, 1 failed,
// 2 bad usage.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		_, _ = fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "render":
		return runRender(args[1:], stdin, stdout, stderr)
	case "sandbox":
		return runSandbox(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		_, _ = fmt.Fprint(stdout, usage)
		return 0
	default:
		_, _ = fmt.Fprintf(stderr, "capk3s: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

const usage = `Usage: capk3s <command> [flags]

Commands:
  render   print the cloud-config a KThreesConfig produces, offline, with placeholder secrets
  sandbox  run capk3s locally on simulated machines and bring up a demo cluster

Run 'capk3s <command> -h' for a command's flags.
`
