package stack

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/core/setup"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/capk3s/capk3s/internal/controlplane/etcdrestore"
)

// SetupRestore registers the KThreesEtcdRestore controller on a manager of its own,
// with its own ClusterCache, as the control-plane manager runs it beside CAPI core:
// a test stops and starts that manager in the middle of a restore, as a killed
// manager pod would be, while the rest of the stack runs on (Options.WithoutRestore).
func SetupRestore(ctx context.Context, mgr ctrl.Manager) error {
	return SetupRestoreWith(0)(ctx, mgr)
}

// SetupRestoreWith is SetupRestore with the first server's deadline (zero: the
// controller's default).
func SetupRestoreWith(firstServerDeadline time.Duration) func(context.Context, ctrl.Manager) error {
	return func(ctx context.Context, mgr ctrl.Manager) error { return setupRestore(ctx, mgr, firstServerDeadline) }
}

func setupRestore(ctx context.Context, mgr ctrl.Manager, firstServerDeadline time.Duration) error {
	cc, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient: mgr.GetAPIReader(),
		Cache:        setup.ClusterCacheCacheOptions(),
		Client:       setup.ClusterCacheClientOptions("capk3s-stack-restore", 20, 30),
	}, controller.Options{})
	if err != nil {
		return fmt.Errorf("restore's cluster cache: %w", err)
	}
	// As in Setup: a restarted manager connects to a restored cluster within seconds.
	if s, ok := cc.(interface{ SetConnectionCreationRetryInterval(time.Duration) }); ok {
		s.SetConnectionCreationRetryInterval(2 * time.Second)
	}
	return (&etcdrestore.Reconciler{Client: mgr.GetClient(), ClusterCache: cc, FirstServerDeadline: firstServerDeadline}).
		SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 4})
}
