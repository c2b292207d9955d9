package bootstrap

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/conversion"
)

// +kubebuilder:webhook:verbs=create;update,path=/mutate-bootstrap-cluster-x-k8s-io-v1beta2-kthreesconfig,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,groups=bootstrap.cluster.x-k8s.io,resources=kthreesconfigs,versions=v1beta2,name=default.kthreesconfig.bootstrap.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update,path=/validate-bootstrap-cluster-x-k8s-io-v1beta2-kthreesconfig,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=bootstrap.cluster.x-k8s.io,resources=kthreesconfigs,versions=v1beta2,name=validation.kthreesconfig.bootstrap.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// KThreesConfig is the defaulting and validating webhook of KThreesConfig.
type KThreesConfig struct{}

var (
	_ admission.Defaulter[*bootstrapv1.KThreesConfig] = &KThreesConfig{}
	_ admission.Validator[*bootstrapv1.KThreesConfig] = &KThreesConfig{}
)

// Default normalizes the spec (see DefaultSpec), after rewriting the v1beta1
// conversion data an earlier release kept whole (see
// conversion.Lookups.MinimizeLegacyKeptData), as the spec it was kept for.
func (*KThreesConfig) Default(ctx context.Context, c *bootstrapv1.KThreesConfig) error {
	// Converting these kinds down looks nothing up: no lookups are needed.
	conversion.Lookups{}.MinimizeLegacyKeptData(ctx, c)
	DefaultSpec(&c.Spec)
	return nil
}

// ValidateCreate rejects a spec that breaks a rule of ValidateSpec, and warns about
// the fields it keeps but ignores (IgnoredFieldWarnings).
func (*KThreesConfig) ValidateCreate(_ context.Context, c *bootstrapv1.KThreesConfig) (admission.Warnings, error) {
	specPath := field.NewPath("spec")
	return IgnoredFieldWarnings(&c.Spec, specPath), configInvalid(c.Name, validateSpec(&c.Spec, specPath))
}

// ValidateUpdate validates the new spec unless it is unchanged. An unchanged spec is
// let through so that an object stored before this webhook existed (or before a rule
// was added) can still have its metadata updated (finalizers, owner references,
// labels) by CAPI and by us; any spec change must produce a fully valid spec. The old
// spec is defaulted first so that defaulting the new one is not mistaken for a change.
// The warnings about ignored fields come with spec changes only, like the checks:
// the controllers' metadata updates would only fill their logs with them.
func (*KThreesConfig) ValidateUpdate(_ context.Context, oldC, newC *bootstrapv1.KThreesConfig) (admission.Warnings, error) {
	oldSpec := oldC.Spec.DeepCopy()
	DefaultSpec(oldSpec)
	if apiequality.Semantic.DeepEqual(*oldSpec, newC.Spec) {
		return nil, nil
	}
	specPath := field.NewPath("spec")
	errs := validateSpec(&newC.Spec, specPath)
	errs = append(errs, ValidateDatastoreChange(&oldSpec.ServerConfig, &newC.Spec.ServerConfig, specPath.Child("serverConfig"))...)
	return IgnoredFieldWarnings(&newC.Spec, specPath), configInvalid(newC.Name, errs)
}

// ValidateDelete allows every deletion: the webhook is not registered for DELETE.
func (*KThreesConfig) ValidateDelete(context.Context, *bootstrapv1.KThreesConfig) (admission.Warnings, error) {
	return nil, nil
}

// configInvalid returns nil for no errors, else the Invalid status error that the
// apiserver relays to the client with every field error.
func configInvalid(name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(bootstrapv1.GroupVersion.WithKind("KThreesConfig").GroupKind(), name, errs)
}
