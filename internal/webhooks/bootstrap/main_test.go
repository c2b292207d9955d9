package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/test/envtest"
	"github.com/capk3s/capk3s/test/webhooktest"
)

var env *envtest.Environment

func TestMain(m *testing.M) {
	if webhooktest.Fuzzing() {
		os.Exit(m.Run())
	}
	envtest.RunMain(m, envtest.Options{Webhooks: true}, &env)
}

// webhookManager serves this package's webhooks where envtest pointed the installed
// webhook configurations.
var webhookManager envtest.SharedManager

// startWebhooks starts webhookManager, once, and returns when the apiserver really
// calls the webhooks (webhooksAnswer). Tests that go through the apiserver call it
// first; the tests that call the webhook methods directly never need it.
func startWebhooks(t *testing.T) {
	t.Helper()
	webhookManager.Start(t, env, envtest.ManagerOptions{Webhooks: true, Ready: webhooksAnswer},
		func(_ context.Context, mgr ctrl.Manager) error { return SetupWebhooks(mgr) })
}

// webhooksAnswer dry-runs the creation of a config that both webhooks act on: the
// server must listen, and the apiserver must have loaded the webhook configurations
// (it picks them up asynchronously, and until then admits everything unchecked).
func webhooksAnswer(ctx context.Context) error {
	probe := &bootstrapv1.KThreesConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, GenerateName: "probe-"},
		Spec:       bootstrapv1.KThreesConfigSpec{Version: "1.31.4+k3s1"},
	}
	if err := env.Client.Create(ctx, probe, client.DryRunAll); err != nil {
		return err
	}
	if probe.Spec.Version != "v1.31.4+k3s1" {
		return errors.New("defaulting webhook not called yet")
	}
	invalid := &bootstrapv1.KThreesConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, GenerateName: "probe-"},
		Spec:       bootstrapv1.KThreesConfigSpec{ServerConfig: bootstrapv1.KThreesServerConfig{AdvertisePort: "0"}},
	}
	err := env.Client.Create(ctx, invalid, client.DryRunAll)
	if apierrors.IsInvalid(err) && strings.Contains(err.Error(), "validation.kthreesconfig.bootstrap.cluster.x-k8s.io") {
		return nil
	}
	if err == nil {
		return errors.New("validating webhook not called yet (invalid config accepted)")
	}
	return fmt.Errorf("validating webhook not called yet: %w", err)
}
