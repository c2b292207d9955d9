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
	"k8s.io/component-base/featuregate"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/core/setup"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/capk3s/capk3s/internal/controlplane"
	"github.com/capk3s/capk3s/internal/controlplane/etcdrestore"
	"github.com/capk3s/capk3s/internal/crdmigration"
	"github.com/capk3s/capk3s/internal/etcdsnapshot"
	"github.com/capk3s/capk3s/internal/inplace"
	"github.com/capk3s/capk3s/internal/manager"
	"github.com/capk3s/capk3s/internal/scheme"
	controlplanewebhooks "github.com/capk3s/capk3s/internal/webhooks/controlplane"
	"github.com/capk3s/capk3s/internal/workload"
)

func main() {
	opts := manager.Options{LeaderElectionID: "kthrees-controlplane-manager-leader-election-capk3s",
		FeatureGates: featuregate.NewFeatureGate()}
	if err := controlplane.AddFeatureGates(opts.FeatureGates); err != nil {
		fmt.Fprintf(os.Stderr, "registering feature gates: %v\n", err)
		os.Exit(2)
	}

	fs := pflag.CommandLine
	// Accept both --foo-bar and --foo_bar, like the CAPI managers.
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	opts.AddFlags(fs)
	var extension inplace.Flags
	extension.AddFlags(fs)
	// Brings in --kubeconfig, which controller-runtime registers on the Go flag set.
	fs.AddGoFlagSet(flag.CommandLine)
	pflag.Parse()

	if err := opts.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "invalid flags: %v\n", err)
		os.Exit(2)
	}
	if err := manager.Run("capk3s-controlplane-manager", scheme.ForControlPlane(), opts, setupReconcilers(opts, extension)); err != nil {
		fmt.Fprintf(os.Stderr, "capk3s-controlplane-manager: %v\n", err)
		os.Exit(1)
	}
}

// setupReconcilers registers the control-plane reconcilers. Their concurrency is the
// manager-wide --concurrency, which controller.Options inherits when left at zero.
func setupReconcilers(opts manager.Options, extension inplace.Flags) manager.SetupFunc {
	return func(ctx context.Context, mgr ctrl.Manager) error {
		// One cached connection per workload cluster, shared by every reader here; of
		// the Events it caches k3s's certificate-monitor Events only.
		clusterCache, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
			SecretClient:     mgr.GetAPIReader(),
			WatchFilterValue: opts.WatchFilterValue,
			Cache:            workload.WithCertMonitorEvents(setup.ClusterCacheCacheOptions()),
			Client:           setup.ClusterCacheClientOptions("capk3s-controlplane-manager", opts.KubeAPIQPS, opts.KubeAPIBurst),
		}, controller.Options{})
		if err != nil {
			return fmt.Errorf("setting up the workload cluster cache: %w", err)
		}
		runtimeClient, err := inPlaceRuntimeClient(ctx, mgr, opts, extension)
		if err != nil {
			return err
		}
		r := &controlplane.Reconciler{Client: mgr.GetClient(), ClusterCache: clusterCache, WatchFilterValue: opts.WatchFilterValue, WatchNamespace: opts.WatchNamespace,
			RuntimeClient: runtimeClient, MinPassInterval: opts.MinPassInterval, RenewalImage: extension.UpgradeImage}
		if err := r.SetupWithManager(ctx, mgr, controller.Options{}); err != nil {
			return fmt.Errorf("setting up the KThreesControlPlane controller: %w", err)
		}
		snapshots := &etcdsnapshot.Reconciler{Client: mgr.GetClient(), WatchFilterValue: opts.WatchFilterValue,
			Workload: etcdsnapshot.LiveWorkloadReader(clusterCache)}
		if err := snapshots.SetupWithManager(ctx, mgr, controller.Options{}); err != nil {
			return fmt.Errorf("setting up the KThreesEtcdSnapshot controller: %w", err)
		}
		if err := (&etcdrestore.Reconciler{Client: mgr.GetClient(), ClusterCache: clusterCache, WatchFilterValue: opts.WatchFilterValue}).SetupWithManager(ctx, mgr, controller.Options{}); err != nil {
			return fmt.Errorf("setting up the KThreesEtcdRestore controller: %w", err)
		}
		if err := controlplanewebhooks.SetupWebhooks(mgr); err != nil {
			return fmt.Errorf("setting up the KThreesControlPlane webhooks: %w", err)
		}
		if err := crdmigration.Setup(ctx, mgr, controlplane.MigratedKinds, opts.SkipCRDMigrationPhases); err != nil {
			return err
		}
		return setupInPlaceExtension(ctx, mgr, opts, extension, clusterCache)
	}
}
