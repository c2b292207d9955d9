package bootstrap

import (
	"context"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/capk3s/capk3s/test/envtest"
)

var env *envtest.Environment

// TestMain shares one apiserver among the package's tests; each test that needs the
// controller starts its own manager and works in its own namespace.
func TestMain(m *testing.M) {
	envtest.RunMain(m, envtest.Options{}, &env)
}

// startManager runs the KThreesConfig reconciler in a manager configured as the
// bootstrap-manager binary's, until the test ends.
func startManager(t *testing.T) {
	t.Helper()
	env.StartManager(t, envtest.ManagerOptions{}, func(ctx context.Context, mgr ctrl.Manager) error {
		r := &Reconciler{Client: mgr.GetClient()}
		return r.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 4})
	})
}
