package release

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/core/setup"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/capk3s/capk3s/internal/bootstrap"
	"github.com/capk3s/capk3s/internal/controlplane"
	"github.com/capk3s/capk3s/internal/scheme"
)

// cacheSyncTimeout bounds how long each controller waits for its informers: a watch
// that RBAC forbids never syncs, and the manager then stops with an error.
const cacheSyncTimeout = 5 * time.Second

// checkManagerRuns starts the provider's reconcilers with the options its Deployment's
// arguments give, as its ServiceAccount (impersonated), and requires the manager to win
// leader election (a Lease in its namespace) and every controller to sync its
// informers: the installed RBAC lets the manager watch everything it watches.
// Webhooks are left out: they need the serving certificate that cert-manager would
// write, and they make no API calls of their own.
func checkManagerRuns(t *testing.T, p installed) {
	t.Helper()
	opts := parseManagerArgs(t, p, managerContainer(t, deployment(t, p)).Args)
	s, register := reconcilersOf(p)
	mgrOpts, err := opts.ManagerOptions(s)
	if err != nil {
		t.Fatal(err)
	}
	// In a Pod the Lease's namespace is the ServiceAccount's; here it must be said.
	mgrOpts.LeaderElectionNamespace = p.namespace
	mgrOpts.Metrics = metricsserver.Options{BindAddress: "0"}
	mgrOpts.HealthProbeBindAddress = "0"
	mgrOpts.Controller.SkipNameValidation = ptr.To(true)
	mgrOpts.Controller.CacheSyncTimeout = cacheSyncTimeout

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: serviceAccount(p),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + p.namespace, "system:authenticated"},
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := register(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()

	select {
	case <-mgr.Elected():
	case err := <-stopped:
		t.Fatalf("manager stopped before winning leader election: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("manager did not win leader election within a minute")
	}
	// Controllers start once elected; each gives up after cacheSyncTimeout, which
	// stops the manager with an error.
	select {
	case err := <-stopped:
		t.Errorf("manager stopped while its controllers started (missing RBAC?): %v", err)
	case <-time.After(cacheSyncTimeout + 3*time.Second):
	}
}

// reconcilersOf registers the provider's reconcilers as cmd/*-manager do.
func reconcilersOf(p installed) (*runtime.Scheme, func(context.Context, ctrl.Manager) error) {
	if p.label == bootstrapLabel {
		return scheme.ForBootstrap(), func(ctx context.Context, mgr ctrl.Manager) error {
			r := &bootstrap.Reconciler{Client: mgr.GetClient()}
			return r.SetupWithManager(ctx, mgr, controller.Options{})
		}
	}
	return scheme.ForControlPlane(), func(ctx context.Context, mgr ctrl.Manager) error {
		cc, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
			SecretClient: mgr.GetAPIReader(),
			Cache:        setup.ClusterCacheCacheOptions(),
			Client:       setup.ClusterCacheClientOptions("capk3s-release-test", 100, 200),
		}, controller.Options{})
		if err != nil {
			return fmt.Errorf("cluster cache: %w", err)
		}
		r := &controlplane.Reconciler{Client: mgr.GetClient(), ClusterCache: cc}
		return r.SetupWithManager(ctx, mgr, controller.Options{})
	}
}
