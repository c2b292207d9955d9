package controlplane

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// SetupWebhooks registers the defaulting and validating webhooks of
// KThreesControlPlane and KThreesControlPlaneTemplate, and the validating webhook of
// the KThreesControlPlane scale subresource, with the manager's webhook server at the
// paths the +kubebuilder:webhook markers of this package declare.
//
// The scale webhook reads the control plane it scales through the manager's API
// reader, not its cache: a webhook must not start informers, and a stale cache could
// let a scale through that the stored rollout strategy forbids.
func SetupWebhooks(mgr ctrl.Manager) error {
	if err := ctrl.NewWebhookManagedBy(mgr, &controlplanev1.KThreesControlPlane{}).
		WithDefaulter(&KThreesControlPlane{}).
		WithValidator(&KThreesControlPlane{}).
		Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &controlplanev1.KThreesControlPlaneTemplate{}).
		WithDefaulter(&KThreesControlPlaneTemplate{}).
		WithValidator(&KThreesControlPlaneTemplate{}).
		Complete(); err != nil {
		return err
	}
	mgr.GetWebhookServer().Register(scaleValidationPath, &webhook.Admission{
		Handler: &ScaleValidator{Reader: mgr.GetAPIReader()},
	})
	return nil
}
