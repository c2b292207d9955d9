package controlplane

import (
	"context"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/capk3s/capk3s/test/envtest"
)

var env *envtest.Environment

// TestMain runs the reconciler in a real manager against the harness's apiserver, as
// the controlplane-manager binary does, for every test of the package.
func TestMain(m *testing.M) {
	envtest.RunMain(m, envtest.Options{}, &env)
}

func startManager(t *testing.T) {
	t.Helper()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// As in production: Secrets are read live, never cached cluster-wide.
		Client:     client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		Controller: ctrlConfigForTests(),
	})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	clusterCache, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient: mgr.GetAPIReader(),
		Client: clustercache.ClientOptions{
			UserAgent: "capk3s-controlplane-test",
			Cache:     clustercache.ClientCacheOptions{DisableFor: []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}}},
		},
	}, controller.Options{SkipNameValidation: ptr.To(true)})
	if err != nil {
		cancel()
		t.Fatalf("setting up ClusterCache: %v", err)
	}
	r := &Reconciler{Client: mgr.GetClient(), ClusterCache: clusterCache}
	if err := r.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 2}); err != nil {
		cancel()
		t.Fatalf("setting up reconciler: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		}
	})
}
