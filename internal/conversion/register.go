package conversion

import (
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// The converters, one per kind served at more than one version, for the webhook
// builder's WithConverter.
var (
	// KThreesConfig converts KThreesConfigs between v1beta1 and the v1beta2 hub.
	KThreesConfig = conversion.NewHubSpokeConverter(&bootstrapv1.KThreesConfig{},
		conversion.NewSpokeConverter(&bootstrapv1beta1.KThreesConfig{}, ConvertKThreesConfigHubToV1Beta1, ConvertKThreesConfigV1Beta1ToHub))
	// KThreesConfigTemplate converts KThreesConfigTemplates between v1beta1 and the v1beta2 hub.
	KThreesConfigTemplate = conversion.NewHubSpokeConverter(&bootstrapv1.KThreesConfigTemplate{},
		conversion.NewSpokeConverter(&bootstrapv1beta1.KThreesConfigTemplate{}, ConvertKThreesConfigTemplateHubToV1Beta1, ConvertKThreesConfigTemplateV1Beta1ToHub))
	// KThreesControlPlane converts KThreesControlPlanes between v1beta1 and the v1beta2 hub.
	KThreesControlPlane = conversion.NewHubSpokeConverter(&controlplanev1.KThreesControlPlane{},
		conversion.NewSpokeConverter(&controlplanev1beta1.KThreesControlPlane{}, ConvertKThreesControlPlaneHubToV1Beta1, ConvertKThreesControlPlaneV1Beta1ToHub))
)
