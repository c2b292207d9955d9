package bootstrap

import (
	ctrl "sigs.k8s.io/controller-runtime"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// SetupWebhooks registers the defaulting and validating webhooks of KThreesConfig and
// KThreesConfigTemplate with the manager's webhook server, at the paths the
// +kubebuilder:webhook markers of this package declare (controller-runtime derives
// the same paths from the group, version and kind).
func SetupWebhooks(mgr ctrl.Manager) error {
	if err := ctrl.NewWebhookManagedBy(mgr, &bootstrapv1.KThreesConfig{}).
		WithDefaulter(&KThreesConfig{}).
		WithValidator(&KThreesConfig{}).
		Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr, &bootstrapv1.KThreesConfigTemplate{}).
		WithDefaulter(&KThreesConfigTemplate{}).
		WithValidator(&KThreesConfigTemplate{}).
		Complete()
}
