package stack

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/cluster-api/controllers/clustercache"
	clustercontroller "sigs.k8s.io/cluster-api/core/reconcilers/cluster"
	clusterclasscontroller "sigs.k8s.io/cluster-api/core/reconcilers/clusterclass"
	extensionconfigcontroller "sigs.k8s.io/cluster-api/core/reconcilers/extensionconfig"
	machinecontroller "sigs.k8s.io/cluster-api/core/reconcilers/machine"
	machinedeploymentcontroller "sigs.k8s.io/cluster-api/core/reconcilers/machinedeployment"
	machinehealthcheckcontroller "sigs.k8s.io/cluster-api/core/reconcilers/machinehealthcheck"
	machinepoolcontroller "sigs.k8s.io/cluster-api/core/reconcilers/machinepool"
	machinesetcontroller "sigs.k8s.io/cluster-api/core/reconcilers/machineset"
	topologyclustercontroller "sigs.k8s.io/cluster-api/core/reconcilers/topology/cluster"
	topologymdcontroller "sigs.k8s.io/cluster-api/core/reconcilers/topology/machinedeployment"
	topologymscontroller "sigs.k8s.io/cluster-api/core/reconcilers/topology/machineset"
	"sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/cluster-api/feature"
	"sigs.k8s.io/cluster-api/util/index"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/capk3s/capk3s/internal/bootstrap"
	"github.com/capk3s/capk3s/internal/controlplane"
	"github.com/capk3s/capk3s/internal/controlplane/etcdrestore"
	"github.com/capk3s/capk3s/internal/etcdsnapshot"
	"github.com/capk3s/capk3s/internal/inplace"
	bootstrapwebhooks "github.com/capk3s/capk3s/internal/webhooks/bootstrap"
	controlplanewebhooks "github.com/capk3s/capk3s/internal/webhooks/controlplane"
	"github.com/capk3s/capk3s/internal/workload"
	"github.com/capk3s/capk3s/test/sim"
)

// Options choose what Setup registers besides the controllers.
type Options struct {
	// Sim is the simulated infrastructure to run; its Client is set by Setup.
	Sim *sim.Provider
	// Webhooks registers capk3s's webhooks on the manager's webhook server.
	Webhooks bool
	// CAPIWebhooks registers CAPI core's webhooks too, for an environment that
	// installed their configurations (envtest.Options.CAPIWebhooks).
	CAPIWebhooks bool
	// Concurrency is each controller's MaxConcurrentReconciles (default 4).
	Concurrency int
	// WithoutCapk3s leaves out capk3s's two reconcilers, for tests that run the manager
	// binaries as processes of their own (webhooks stay, if asked for).
	WithoutCapk3s bool
	// WithoutRestore leaves the KThreesEtcdRestore controller out, for tests that run
	// it in a manager of their own (SetupRestore) to stop and start it.
	WithoutRestore bool
	// InPlaceExtension, when set, serves capk3s's in-place update extension (as the
	// control-plane manager does with --runtime-extension-port), reaching workload
	// clusters through the stack's ClusterCache. The test registers it with an
	// ExtensionConfig.
	InPlaceExtension *ExtensionServing
}

// ExtensionServing is where the in-place update extension listens, and its serving
// certificate (tls.crt and tls.key in CertDir).
type ExtensionServing struct {
	Host    string
	Port    int
	CertDir string
}

// Setup registers everything on mgr. ctx is the manager's: it ends when the manager
// stops.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.Concurrency == 0 {
		opts.Concurrency = 4
	}
	copts := controller.Options{MaxConcurrentReconciles: opts.Concurrency}
	// CAPI's Machine controller keeps a Machine's spec.taints on its Node only with
	// this alpha gate on (CAPI's --feature-gates flag, clusterctl's
	// EXP_MACHINE_TAINT_PROPAGATION); the stack runs CAPI as the docs ask users to.
	// The Runtime SDK and in-place updates (CAPI's --feature-gates RuntimeSDK and
	// InPlaceUpdates, clusterctl's EXP_RUNTIME_SDK and EXP_IN_PLACE_UPDATES) are on
	// too: without a registered extension they change nothing, and with one CAPI's
	// Machine and MachineDeployment controllers drive in-place updates. ClusterClasses
	// and Clusters with a topology (CAPI's --feature-gates ClusterTopology,
	// clusterctl's CLUSTER_TOPOLOGY) are reconciled too, as docs/templates.md asks
	// users to run CAPI for the topology template.
	if err := feature.MutableGates.SetFromMap(map[string]bool{
		string(feature.ClusterTopology):         true,
		string(feature.MachineTaintPropagation): true,
		string(feature.RuntimeSDK):              true,
		string(feature.InPlaceUpdates):          true,
	}); err != nil {
		return fmt.Errorf("feature gates: %w", err)
	}
	if err := index.AddDefaultIndexes(ctx, mgr); err != nil {
		return fmt.Errorf("indexes: %w", err)
	}
	// CAPI's own options: its Machine controller drains with live Pod lists.
	cc, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient: mgr.GetAPIReader(),
		Cache:        workload.WithCertMonitorEvents(setup.ClusterCacheCacheOptions()),
		Client:       setup.ClusterCacheClientOptions("capk3s-stack", 100, 200),
	}, copts)
	if err != nil {
		return fmt.Errorf("cluster cache: %w", err)
	}
	// The first connection attempt comes before the kubeconfig Secret exists; the
	// default retry interval (30s) would idle every new cluster that long.
	if s, ok := cc.(interface{ SetConnectionCreationRetryInterval(time.Duration) }); ok {
		s.SetConnectionCreationRetryInterval(2 * time.Second)
	}
	c, r := mgr.GetClient(), mgr.GetAPIReader()
	// The extension answers only callers with a client certificate it trusts.
	var callersCA, callerCert, callerKey string
	if opts.InPlaceExtension != nil {
		if callersCA, callerCert, callerKey, err = extensionCallers(ctx); err != nil {
			return fmt.Errorf("in-place extension callers' certificates: %w", err)
		}
	}
	hooks, err := runtimeHooksClient(c, callerCert, callerKey)
	if err != nil {
		return err
	}
	// A list, not a map: controllers register in a fixed order, run after run.
	for _, step := range []struct {
		name  string
		setup func() error
	}{
		{"CAPI ExtensionConfig", func() error {
			// As CAPI core runs it: it discovers extensions and writes their handlers
			// into the ExtensionConfigs' status, which every Runtime SDK client reads.
			return (&extensionconfigcontroller.Reconciler{Client: c, APIReader: r, RuntimeClient: hooks, PartialSecretCache: mgr.GetCache()}).
				SetupWithManager(ctx, mgr, copts)
		}},
		{"CAPI Cluster", func() error {
			return (&clustercontroller.Reconciler{Client: c, APIReader: r, ClusterCache: cc, RemoteConnectionGracePeriod: 50 * time.Second}).
				SetupWithManager(ctx, mgr, copts)
		}},
		{"CAPI ClusterClass", func() error {
			return (&clusterclasscontroller.Reconciler{Client: c, RuntimeClient: hooks}).SetupWithManager(ctx, mgr, copts)
		}},
		{"CAPI ClusterTopology", func() error {
			return (&topologyclustercontroller.Reconciler{Client: c, APIReader: r, RuntimeClient: hooks, ClusterCache: cc}).
				SetupWithManager(ctx, mgr, copts)
		}},
		{"CAPI MachineDeployment topology", func() error {
			return (&topologymdcontroller.Reconciler{Client: c, APIReader: r}).SetupWithManager(ctx, mgr, copts)
		}},
		{"CAPI MachineSet topology", func() error {
			return (&topologymscontroller.Reconciler{Client: c, APIReader: r}).SetupWithManager(ctx, mgr, copts)
		}},
		{"CAPI Machine", func() error {
			return (&machinecontroller.Reconciler{Client: c, APIReader: r, ClusterCache: cc, RuntimeClient: hooks, RemoteConditionsGracePeriod: 5 * time.Minute}).
				SetupWithManager(ctx, mgr, copts)
		}},
		{"CAPI MachineSet", func() error {
			return (&machinesetcontroller.Reconciler{Client: c, APIReader: r, ClusterCache: cc}).SetupWithManager(ctx, mgr, copts)
		}},
		{"CAPI MachineDeployment", func() error {
			return (&machinedeploymentcontroller.Reconciler{Client: c, APIReader: r, RuntimeClient: hooks}).SetupWithManager(ctx, mgr, copts)
		}},
		{"CAPI MachinePool", func() error {
			// CAPI's MachinePool feature gate is on by default; its indexes came with
			// AddDefaultIndexes above.
			return (&machinepoolcontroller.Reconciler{Client: c, APIReader: r, ClusterCache: cc}).SetupWithManager(ctx, mgr, copts)
		}},
		{"CAPI MachineHealthCheck", func() error {
			// As CAPI's main.go sets it up (no watch filter in tests).
			return (&machinehealthcheckcontroller.Reconciler{Client: c, ClusterCache: cc}).SetupWithManager(ctx, mgr, copts)
		}},
		{"KThreesControlPlane", func() error {
			if opts.WithoutCapk3s {
				return nil
			}
			return (&controlplane.Reconciler{Client: c, ClusterCache: cc, RuntimeClient: hooks}).SetupWithManager(ctx, mgr, copts)
		}},
		{"KThreesEtcdSnapshot", func() error {
			if opts.WithoutCapk3s {
				return nil
			}
			return (&etcdsnapshot.Reconciler{Client: c, Workload: etcdsnapshot.LiveWorkloadReader(cc)}).SetupWithManager(ctx, mgr, copts)
		}},
		{"KThreesEtcdRestore", func() error {
			if opts.WithoutCapk3s || opts.WithoutRestore {
				return nil
			}
			// As the control-plane manager registers it (cmd/controlplane-manager).
			return (&etcdrestore.Reconciler{Client: c, ClusterCache: cc}).SetupWithManager(ctx, mgr, copts)
		}},
		{"KThreesConfig", func() error {
			if opts.WithoutCapk3s {
				return nil
			}
			return (&bootstrap.Reconciler{Client: c}).SetupWithManager(ctx, mgr, copts)
		}},
	} {
		if err := step.setup(); err != nil {
			return fmt.Errorf("%s reconciler: %w", step.name, err)
		}
	}
	if opts.Sim != nil {
		opts.Sim.Client = c
		if err := opts.Sim.SetupWithManager(mgr, copts); err != nil {
			return fmt.Errorf("simulator: %w", err)
		}
	}
	if e := opts.InPlaceExtension; e != nil {
		// Workload clusters answer in a few seconds here: a short retry keeps the
		// in-place steps, each waiting for a Node, from idling.
		if err := inplace.SetupExtension(ctx, mgr, inplace.ExtensionOptions{
			Host: e.Host, Port: e.Port, CertDir: e.CertDir, Workload: cc, RetryAfterSeconds: 1,
			ClientCAFiles: []string{callersCA},
		}); err != nil {
			return fmt.Errorf("in-place update extension: %w", err)
		}
	}
	if opts.Webhooks {
		if err := bootstrapwebhooks.SetupWebhooks(mgr); err != nil {
			return fmt.Errorf("bootstrap webhooks: %w", err)
		}
		if err := controlplanewebhooks.SetupWebhooks(mgr); err != nil {
			return fmt.Errorf("control-plane webhooks: %w", err)
		}
	}
	if opts.CAPIWebhooks {
		if err := setupCAPIWebhooks(mgr, cc); err != nil {
			return fmt.Errorf("CAPI core's webhooks: %w", err)
		}
	}
	return nil
}
