package conversion

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// Lookups is what conversion reads besides the object it converts. Each manager
// builds its own at webhook setup and its converters carry it, so that two managers
// in one process (the tests and the sandbox run several) never read through each
// other's clients. Converters built from a Lookups without a field behave as when
// the lookup finds nothing.
//
// controller-runtime's webhook builder takes one converter factory per kind
// (WithConverter) and calls the spoke functions it was built with, with the
// request's context: the functions are this type's methods, bound to one value.
type Lookups struct {
	// APIVersion finds the apiVersion of a KThreesControlPlane's infrastructure
	// template when converting down (apiversion.go). Without it the reference shows
	// the template's group alone.
	APIVersion APIVersionGetter
	// Stored reads the stored object that converting up takes the withheld fields
	// from (withheld.go): an API reader, not a cache, which could be behind the write
	// being converted. Without it a named object with withheld fields is refused.
	Stored client.Reader
}

func (l Lookups) apiVersion(ctx context.Context, gk schema.GroupKind) (string, error) {
	if l.APIVersion == nil {
		return "", errors.New("no apiVersion getter is set for conversion")
	}
	return l.APIVersion(ctx, gk)
}

// Converter is the factory the webhook builder's WithConverter takes.
type Converter = func(*runtime.Scheme) (conversion.Converter, error)

// KThreesConfig converts KThreesConfigs between v1beta1 and the v1beta2 hub.
func (l Lookups) KThreesConfig() Converter {
	return conversion.NewHubSpokeConverter(&bootstrapv1.KThreesConfig{},
		conversion.NewSpokeConverter(&bootstrapv1beta1.KThreesConfig{}, l.ConvertKThreesConfigHubToV1Beta1, l.ConvertKThreesConfigV1Beta1ToHub))
}

// KThreesConfigTemplate converts KThreesConfigTemplates between v1beta1 and the v1beta2 hub.
func (l Lookups) KThreesConfigTemplate() Converter {
	return conversion.NewHubSpokeConverter(&bootstrapv1.KThreesConfigTemplate{},
		conversion.NewSpokeConverter(&bootstrapv1beta1.KThreesConfigTemplate{}, l.ConvertKThreesConfigTemplateHubToV1Beta1, l.ConvertKThreesConfigTemplateV1Beta1ToHub))
}

// KThreesControlPlane converts KThreesControlPlanes between v1beta1 and the v1beta2 hub.
func (l Lookups) KThreesControlPlane() Converter {
	return conversion.NewHubSpokeConverter(&controlplanev1.KThreesControlPlane{},
		conversion.NewSpokeConverter(&controlplanev1beta1.KThreesControlPlane{}, l.ConvertKThreesControlPlaneHubToV1Beta1, l.ConvertKThreesControlPlaneV1Beta1ToHub))
}
