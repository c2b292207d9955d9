package bootstrap

import (
	ctrl "sigs.k8s.io/controller-runtime"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/conversion"
)

// Up-conversion of a KThreesConfigTemplate reads the stored template (see below);
// the manager reads KThreesConfigs for its controller already.
// +kubebuilder:rbac:groups=bootstrap.cluster.x-k8s.io,resources=kthreesconfigtemplates,verbs=get

// SetupWebhooks registers the defaulting and validating webhooks of KThreesConfig and
// KThreesConfigTemplate with the manager's webhook server, at the paths the
// +kubebuilder:webhook markers of this package declare (controller-runtime derives
// the same paths from the group, version and kind), and their converters between the
// deprecated v1beta1 and v1beta2 at /convert, where the CRDs' conversion webhook
// points. Up-conversion reads the stored object, through this manager's API reader,
// for the fields it never shows at v1beta1 (extraConfig, bootCommands: they may
// carry credentials). Neither kind names an infrastructure template, so the
// converters need no apiVersion getter. The converters carry their lookups, so
// managers sharing a process (the sandbox, tests) each convert with their own.
func SetupWebhooks(mgr ctrl.Manager) error {
	lookups := conversion.Lookups{Stored: mgr.GetAPIReader()}
	if err := ctrl.NewWebhookManagedBy(mgr, &bootstrapv1.KThreesConfig{}).
		WithDefaulter(&KThreesConfig{}).
		WithValidator(&KThreesConfig{}).
		WithConverter(lookups.KThreesConfig()).
		Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr, &bootstrapv1.KThreesConfigTemplate{}).
		WithDefaulter(&KThreesConfigTemplate{}).
		WithValidator(&KThreesConfigTemplate{}).
		WithConverter(lookups.KThreesConfigTemplate()).
		Complete()
}
