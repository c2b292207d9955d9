package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
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

// webhooksAnswer dry-runs the creation of control planes that both webhooks act on:
// the server must listen, and the apiserver must have loaded the webhook
// configurations (it picks them up asynchronously, and until then admits everything
// unchecked).
func webhooksAnswer(ctx context.Context) error {
	probe := probeControlPlane()
	if err := env.Client.Create(ctx, probe, client.DryRunAll); err != nil {
		return err
	}
	if probe.Spec.Version != "v1.31.4+k3s1" {
		return errors.New("defaulting webhook not called yet")
	}
	invalid := probeControlPlane()
	invalid.Spec.Replicas = ptr.To[int32](2)
	err := env.Client.Create(ctx, invalid, client.DryRunAll)
	if apierrors.IsInvalid(err) && strings.Contains(err.Error(), "validation.kthreescontrolplane.controlplane.cluster.x-k8s.io") {
		return nil
	}
	if err == nil {
		return errors.New("validating webhook not called yet (invalid control plane accepted)")
	}
	return fmt.Errorf("validating webhook not called yet: %w", err)
}

func probeControlPlane() *controlplanev1.KThreesControlPlane {
	return &controlplanev1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, GenerateName: "probe-"},
		Spec: controlplanev1.KThreesControlPlaneSpec{
			Version: "1.31.4+k3s1",
			MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{
				Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{InfrastructureRef: dockerRef},
			},
		},
	}
}
