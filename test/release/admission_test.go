package release

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	bootstrapwebhooks "github.com/capk3s/capk3s/internal/webhooks/bootstrap"
	controlplanewebhooks "github.com/capk3s/capk3s/internal/webhooks/controlplane"
	"github.com/capk3s/capk3s/test/envtest"
)

// webhookManager serves both providers' webhooks where envtest pointed its webhook
// configurations (config/*/webhook, as generated).
var webhookManager envtest.SharedManager

// startWebhooks starts webhookManager once and returns when the apiserver really
// calls both providers' webhooks, and only them.
func startWebhooks(t *testing.T) {
	t.Helper()
	webhookManager.Start(t, env, envtest.ManagerOptions{Webhooks: true, Ready: webhooksAnswer},
		func(_ context.Context, mgr ctrl.Manager) error {
			if err := bootstrapwebhooks.SetupWebhooks(mgr); err != nil {
				return err
			}
			return controlplanewebhooks.SetupWebhooks(mgr)
		})
}

// webhooksAnswer dry-runs a config template that the bootstrap defaulting webhook
// changes and a control plane that the control-plane validating webhook refuses. The
// apiserver loads webhook configurations asynchronously, so this also waits until
// configurations deleted by an earlier test (clusterctl's, with no Pod behind them)
// are no longer called.
func webhooksAnswer(ctx context.Context) error {
	probe := &bootstrapv1.KThreesConfigTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, GenerateName: "probe-"},
		Spec: bootstrapv1.KThreesConfigTemplateSpec{Template: bootstrapv1.KThreesConfigTemplateResource{
			Spec: bootstrapv1.KThreesConfigSpec{Version: "1.35.4+k3s1"},
		}},
	}
	if err := env.Client.Create(ctx, probe, client.DryRunAll); err != nil {
		return err
	}
	if probe.Spec.Template.Spec.Version != "v1.35.4+k3s1" {
		return errors.New("bootstrap defaulting webhook not called yet")
	}
	invalid := &controlplanev1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, GenerateName: "probe-"},
		Spec: controlplanev1.KThreesControlPlaneSpec{
			Replicas: ptr.To[int32](2),
			Version:  "v1.35.4+k3s1",
			MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{
				Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachineTemplate", Name: "probe",
					},
				},
			},
		},
	}
	err := env.Client.Create(ctx, invalid, client.DryRunAll)
	if apierrors.IsInvalid(err) && strings.Contains(err.Error(), "validation.kthreescontrolplane.controlplane.cluster.x-k8s.io") {
		return nil
	}
	if err == nil {
		return errors.New("control-plane validating webhook not called yet (invalid control plane accepted)")
	}
	return fmt.Errorf("control-plane validating webhook not called yet: %w", err)
}
