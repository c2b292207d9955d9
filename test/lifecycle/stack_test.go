package lifecycle

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	clustercontroller "sigs.k8s.io/cluster-api/core/reconcilers/cluster"
	machinecontroller "sigs.k8s.io/cluster-api/core/reconcilers/machine"
	"sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/cluster-api/util/index"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/capk3s/capk3s/internal/bootstrap"
	"github.com/capk3s/capk3s/internal/controlplane"
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
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Client: client.Options{Cache: &client.CacheOptions{
			DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}},
		}},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	must := func(what string, err error) {
		if err != nil {
			cancel()
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("indexes", index.AddDefaultIndexes(ctx, mgr))
	// CAPI's own options: its Machine controller drains with live Pod lists.
	cc, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient: mgr.GetAPIReader(),
		Cache:        setup.ClusterCacheCacheOptions(),
		Client:       setup.ClusterCacheClientOptions("capk3s-lifecycle-test", 100, 200),
	}, controller.Options{})
	must("cluster cache", err)
	// The first connection attempt comes before the kubeconfig Secret exists; a short
	// retry interval (CAPI's tests do the same) keeps the test quick.
	if s, ok := cc.(interface{ SetConnectionCreationRetryInterval(time.Duration) }); ok {
		s.SetConnectionCreationRetryInterval(time.Second)
	}

	must("CAPI Cluster reconciler", (&clustercontroller.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ClusterCache: cc,
		RemoteConnectionGracePeriod: 50 * time.Second,
	}).SetupWithManager(ctx, mgr, controller.Options{}))
	must("CAPI Machine reconciler", (&machinecontroller.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ClusterCache: cc,
		RemoteConditionsGracePeriod: 5 * time.Minute,
	}).SetupWithManager(ctx, mgr, controller.Options{}))
	must("KThreesControlPlane reconciler", (&controlplane.Reconciler{
		Client: mgr.GetClient(), ClusterCache: cc,
	}).SetupWithManager(ctx, mgr, controller.Options{}))
	must("KThreesConfig reconciler", (&bootstrap.Reconciler{
		Client: mgr.GetClient(),
	}).SetupWithManager(ctx, mgr, controller.Options{}))
	must("infrastructure stand-in", infra.setupWithManager(mgr))

	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("manager: %v", err)
		}
	})
	return &stack{clusterCache: cc, client: mgr.GetClient()}
}
