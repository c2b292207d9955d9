package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/envtest"
)

var env *envtest.Environment

func TestMain(m *testing.M) {
	envtest.RunMain(m, envtest.Options{Webhooks: true}, &env)
}

var (
	managerOnce sync.Once
	managerErr  error
)

// startWebhooks starts the package's one manager, serving this package's webhooks
// where envtest pointed the installed webhook configurations, and returns once the
// apiserver really calls them. Tests that go through the apiserver call it first;
// the unit tests never need it. RunMain offers no hook between starting the
// apiserver and running the tests, hence the lazy start. The manager runs until the
// test binary exits.
func startWebhooks(t *testing.T) {
	t.Helper()
	managerOnce.Do(func() { managerErr = runManager() })
	if managerErr != nil {
		t.Fatalf("starting the webhook manager: %v", managerErr)
	}
}

func runManager() error {
	ctrl.SetLogger(logr.Discard())
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		WebhookServer:          env.WebhookServer(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := SetupWebhooks(mgr); err != nil {
		return fmt.Errorf("registering webhooks: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(context.Background()) }()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ready := func() error {
		if err := mgr.GetWebhookServer().StartedChecker()(&http.Request{}); err != nil {
			return err
		}
		return webhooksAnswer(ctx)
	}
	for {
		err := ready()
		if err == nil {
			return nil
		}
		select {
		case startErr := <-done:
			return fmt.Errorf("manager stopped: %w", startErr)
		case <-ctx.Done():
			return fmt.Errorf("webhooks not answering: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
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
