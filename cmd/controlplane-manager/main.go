// Command controlplane-manager runs the capk3s control-plane provider, which
// manages the k3s server Machines that KThreesControlPlanes describe.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/capk3s/capk3s/internal/manager"
	"github.com/capk3s/capk3s/internal/scheme"
)

func main() {
	opts := manager.Options{LeaderElectionID: "kthrees-controlplane-manager-leader-election-capk3s"}

	fs := pflag.CommandLine
	// Accept both --foo-bar and --foo_bar, like the CAPI managers.
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	opts.AddFlags(fs)
	// Brings in --kubeconfig, which controller-runtime registers on the Go flag set.
	fs.AddGoFlagSet(flag.CommandLine)
	pflag.Parse()

	if err := opts.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "invalid flags: %v\n", err)
		os.Exit(2)
	}
	if err := manager.Run("capk3s-controlplane-manager", scheme.ForControlPlane(), opts, setupReconcilers); err != nil {
		fmt.Fprintf(os.Stderr, "capk3s-controlplane-manager: %v\n", err)
		os.Exit(1)
	}
}

// setupReconcilers is where the control-plane reconcilers and webhooks are
// registered as they are built. Until then the binary still starts, serves
// probes and metrics, and takes part in leader election.
func setupReconcilers(_ context.Context, _ ctrl.Manager) error {
	return nil
}
