// Command bootstrap-manager runs the capk3s bootstrap provider, which turns
// KThreesConfigs into the k3s bootstrap data that Machines boot from.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/capk3s/capk3s/internal/bootstrap"
	"github.com/capk3s/capk3s/internal/crdmigration"
	"github.com/capk3s/capk3s/internal/manager"
	"github.com/capk3s/capk3s/internal/scheme"
	bootstrapwebhooks "github.com/capk3s/capk3s/internal/webhooks/bootstrap"
)

func main() {
	opts := manager.Options{LeaderElectionID: "kthrees-bootstrap-manager-leader-election-capk3s"}

	fs := pflag.CommandLine
	// Accept both --foo-bar and --foo_bar, like the CAPI managers.
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	opts.AddFlags(fs)
	var installScriptURL string
	fs.StringVar(&installScriptURL, "k3s-install-script-url", "",
		"Where machines download the k3s install script from (default: k3s's official location). Use a mirror for restricted networks.")
	// Brings in --kubeconfig, which controller-runtime registers on the Go flag set.
	fs.AddGoFlagSet(flag.CommandLine)
	pflag.Parse()

	if err := opts.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "invalid flags: %v\n", err)
		os.Exit(2)
	}
	if err := manager.Run("capk3s-bootstrap-manager", scheme.ForBootstrap(), opts, setupReconcilers(opts, installScriptURL)); err != nil {
		fmt.Fprintf(os.Stderr, "capk3s-bootstrap-manager: %v\n", err)
		os.Exit(1)
	}
}

// setupReconcilers registers the bootstrap reconciler and webhooks. Its concurrency is the
// manager-wide --concurrency, which controller.Options inherits when left at zero.
func setupReconcilers(opts manager.Options, installScriptURL string) manager.SetupFunc {
	return func(ctx context.Context, mgr ctrl.Manager) error {
		r := &bootstrap.Reconciler{
			Client:           mgr.GetClient(),
			WatchFilterValue: opts.WatchFilterValue,
			WatchNamespace:   opts.WatchNamespace,
			InstallScriptURL: installScriptURL,
			MinPassInterval:  opts.MinPassInterval,
		}
		if err := r.SetupWithManager(ctx, mgr, controller.Options{}); err != nil {
			return fmt.Errorf("setting up the KThreesConfig controller: %w", err)
		}
		if err := bootstrapwebhooks.SetupWebhooks(mgr); err != nil {
			return fmt.Errorf("setting up the KThreesConfig webhooks: %w", err)
		}
		if err := crdmigration.Setup(ctx, mgr, bootstrap.MigratedKinds, opts.SkipCRDMigrationPhases); err != nil {
			return err
		}
		return nil
	}
}
