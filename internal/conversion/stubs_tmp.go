package conversion

import (
	"context"
	"errors"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

var errTODO = errors.New("not yet")

func ConvertKThreesConfigHubToV1Beta1(_ context.Context, _ *bootstrapv1.KThreesConfig, _ *bootstrapv1beta1.KThreesConfig) error {
	return errTODO
}
func ConvertKThreesConfigV1Beta1ToHub(_ context.Context, _ *bootstrapv1beta1.KThreesConfig, _ *bootstrapv1.KThreesConfig) error {
	return errTODO
}
func ConvertKThreesConfigTemplateHubToV1Beta1(_ context.Context, _ *bootstrapv1.KThreesConfigTemplate, _ *bootstrapv1beta1.KThreesConfigTemplate) error {
	return errTODO
}
func ConvertKThreesConfigTemplateV1Beta1ToHub(_ context.Context, _ *bootstrapv1beta1.KThreesConfigTemplate, _ *bootstrapv1.KThreesConfigTemplate) error {
	return errTODO
}
func ConvertKThreesControlPlaneHubToV1Beta1(_ context.Context, _ *controlplanev1.KThreesControlPlane, _ *controlplanev1beta1.KThreesControlPlane) error {
	return errTODO
}
func ConvertKThreesControlPlaneV1Beta1ToHub(_ context.Context, _ *controlplanev1beta1.KThreesControlPlane, _ *controlplanev1.KThreesControlPlane) error {
	return errTODO
}
