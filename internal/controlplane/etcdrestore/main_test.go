package etcdrestore

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/capk3s/capk3s/internal/controlplane"
	"github.com/capk3s/capk3s/test/envtest"
)

var env *envtest.Environment

// TestMain runs one apiserver for the package's tests.
func TestMain(m *testing.M) {
	envtest.RunMain(m, envtest.Options{}, &env)
}

// runManager runs the restore controller and the KThreesControlPlane controller, as
// the controlplane-manager binary does, until stop is called (or the test ends).
func runManager(t *testing.T) (stop func()) {
	t.Helper()
	return runManagerWith(t, 0)
}

// runManagerWith is runManager with the restore controller's first-server deadline.
func runManagerWith(t *testing.T, firstServerDeadline time.Duration) (stop func()) {
	t.Helper()
	_, stopMgr, err := env.RunManager(envtest.ManagerOptions{}, func(ctx context.Context, mgr ctrl.Manager) error {
		clusterCache, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
			SecretClient: mgr.GetAPIReader(),
			Client: clustercache.ClientOptions{
				UserAgent: "capk3s-etcdrestore-test",
				Cache:     clustercache.ClientCacheOptions{DisableFor: []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}}},
			},
		}, controller.Options{SkipNameValidation: ptr.To(true)})
		if err != nil {
			return fmt.Errorf("setting up ClusterCache: %w", err)
		}
		if err := (&controlplane.Reconciler{Client: mgr.GetClient(), ClusterCache: clusterCache}).SetupWithManager(ctx, mgr, controller.Options{}); err != nil {
			return err
		}
		return (&Reconciler{Client: mgr.GetClient(), ClusterCache: clusterCache, FirstServerDeadline: firstServerDeadline}).SetupWithManager(ctx, mgr, controller.Options{})
	})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		if err := stopMgr(); err != nil {
			t.Logf("manager: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}
