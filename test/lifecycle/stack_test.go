package lifecycle

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/cluster-api/controllers/clustercache"
	clustercontroller "sigs.k8s.io/cluster-api/core/reconcilers/cluster"
	machinecontroller "sigs.k8s.io/cluster-api/core/reconcilers/machine"
	"sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/cluster-api/util/index"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/capk3s/capk3s/internal/bootstrap"
	"github.com/capk3s/capk3s/internal/controlplane"
	"github.com/capk3s/capk3s/test/envtest"
)

// stack is one manager running everything a management cluster would.
type stack struct {
	clusterCache clustercache.ClusterCache
	client       client.Client
}

// startStack starts CAPI's Cluster and Machine reconcilers, both capk3s reconcilers
// and the infrastructure stand-in in one manager, stopped when the test ends.
func startStack(t *testing.T, infra *infraProvider) *stack {
	t.Helper()
	var cc clustercache.ClusterCache
	mgr := env.StartManager(t, envtest.ManagerOptions{}, func(ctx context.Context, mgr ctrl.Manager) error {
		var err error
		cc, err = setupStack(ctx, mgr, infra)
		return err
	})
	return &stack{clusterCache: cc, client: mgr.GetClient()}
}

// setupStack registers everything startStack runs, and returns the ClusterCache.
func setupStack(ctx context.Context, mgr ctrl.Manager, infra *infraProvider) (clustercache.ClusterCache, error) {
	if err := index.AddDefaultIndexes(ctx, mgr); err != nil {
		return nil, fmt.Errorf("indexes: %w", err)
	}
	// CAPI's own options: its Machine controller drains with live Pod lists.
	cc, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient: mgr.GetAPIReader(),
		Cache:        setup.ClusterCacheCacheOptions(),
		Client:       setup.ClusterCacheClientOptions("capk3s-lifecycle-test", 100, 200),
	}, controller.Options{})
	if err != nil {
		return nil, fmt.Errorf("cluster cache: %w", err)
	}
	// The first connection attempt comes before the kubeconfig Secret exists; a short
	// retry interval (CAPI's tests do the same) keeps the test quick.
	if s, ok := cc.(interface{ SetConnectionCreationRetryInterval(time.Duration) }); ok {
		s.SetConnectionCreationRetryInterval(time.Second)
	}

	if err := (&clustercontroller.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ClusterCache: cc,
		RemoteConnectionGracePeriod: 50 * time.Second,
	}).SetupWithManager(ctx, mgr, controller.Options{}); err != nil {
		return nil, fmt.Errorf("CAPI Cluster reconciler: %w", err)
	}
	if err := (&machinecontroller.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ClusterCache: cc,
		RemoteConditionsGracePeriod: 5 * time.Minute,
	}).SetupWithManager(ctx, mgr, controller.Options{}); err != nil {
		return nil, fmt.Errorf("CAPI Machine reconciler: %w", err)
	}
	if err := (&controlplane.Reconciler{
		Client: mgr.GetClient(), ClusterCache: cc,
	}).SetupWithManager(ctx, mgr, controller.Options{}); err != nil {
		return nil, fmt.Errorf("KThreesControlPlane reconciler: %w", err)
	}
	if err := (&bootstrap.Reconciler{
		Client: mgr.GetClient(),
	}).SetupWithManager(ctx, mgr, controller.Options{}); err != nil {
		return nil, fmt.Errorf("KThreesConfig reconciler: %w", err)
	}
	if err := infra.setupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("infrastructure stand-in: %w", err)
	}
	return cc, nil
}
