// Command cleanup removes what a real-k3s layer run left on this host (its machines'
// processes, namespaces, cgroups and files, the bridge) and puts back the kernel
// settings the kubelets changed. make test-k3s runs it after the tests whatever
// their outcome: a test binary killed by its timeout runs no cleanup of its own.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/capk3s/capk3s/test/realk3s/host"
)

func main() {
	dir := flag.String("dir", filepath.Join(os.Getenv("HOME"), ".cache", "capk3s", "realk3s", "run"), "the layer's state folder")
	flag.Parse()
	if err := host.Cleanup(*dir); err != nil {
		fmt.Fprintf(os.Stderr, "cleanup: %v\n", err)
		os.Exit(1)
	}
}
