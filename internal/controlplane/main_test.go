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

	"github.com/capk3s/capk3s/internal/workload"
	"github.com/capk3s/capk3s/test/envtest"
	"github.com/capk3s/capk3s/test/webhooktest"
)

var env *envtest.Environment

// TestMain runs the reconciler in a real manager against the harness's apiserver, as
// the controlplane-manager binary does, for every test of the package.
func TestMain(m *testing.M) {
	if webhooktest.Fuzzing() {
		os.Exit(m.Run())
	}
	envtest.RunMain(m, envtest.Options{}, &env)
}

// startManager runs the KThreesControlPlane reconciler and its ClusterCache in a
// manager configured as the controlplane-manager binary's, until the test ends.
func startManager(t *testing.T) {
	t.Helper()
	startManagerWith(t, envtest.ManagerOptions{})
}

// startManagerWith is startManager with options (a transport that watches requests).
func startManagerWith(t *testing.T, opts envtest.ManagerOptions) {
	t.Helper()
	env.StartManager(t, opts, func(ctx context.Context, mgr ctrl.Manager) error {
		clusterCache, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
			SecretClient: mgr.GetAPIReader(),
			Cache:        workload.WithCertMonitorEvents(clustercache.CacheOptions{}),
			Client: clustercache.ClientOptions{
				UserAgent: "capk3s-controlplane-test",
				Cache:     clustercache.ClientCacheOptions{DisableFor: []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}}},
			},
		}, controller.Options{SkipNameValidation: ptr.To(true)})
		if err != nil {
			return fmt.Errorf("setting up ClusterCache: %w", err)
		}
		r := &Reconciler{Client: mgr.GetClient(), ClusterCache: clusterCache}
		return r.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 2})
	})
}
