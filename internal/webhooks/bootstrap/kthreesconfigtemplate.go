package bootstrap

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/conversion"
	"github.com/capk3s/capk3s/internal/webhooks/webhookutil"
)

// +kubebuilder:webhook:verbs=create;update,path=/mutate-bootstrap-cluster-x-k8s-io-v1beta2-kthreesconfigtemplate,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,groups=bootstrap.cluster.x-k8s.io,resources=kthreesconfigtemplates,versions=v1beta2,name=default.kthreesconfigtemplate.bootstrap.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update,path=/validate-bootstrap-cluster-x-k8s-io-v1beta2-kthreesconfigtemplate,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=bootstrap.cluster.x-k8s.io,resources=kthreesconfigtemplates,versions=v1beta2,name=validation.kthreesconfigtemplate.bootstrap.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// immutableTemplateMessage explains the rule and the way out: MachineSets copy a
// template when they create machines, so editing it in place would leave existing
// machines silently different from it and never roll them out.
const immutableTemplateMessage = "KThreesConfigTemplate spec.template.spec is immutable; create a new template and point the MachineDeployment at it"

// KThreesConfigTemplate is the defaulting and validating webhook of
// KThreesConfigTemplate.
type KThreesConfigTemplate struct{}

var (
	_ admission.Defaulter[*bootstrapv1.KThreesConfigTemplate] = &KThreesConfigTemplate{}
	_ admission.Validator[*bootstrapv1.KThreesConfigTemplate] = &KThreesConfigTemplate{}
)

// Default normalizes spec.template.spec like a KThreesConfig's spec, so the configs
// cloned from the template are already normalized; first, the v1beta1 conversion data
// an earlier release kept whole is rewritten, as KThreesConfig's Default does.
func (*KThreesConfigTemplate) Default(ctx context.Context, t *bootstrapv1.KThreesConfigTemplate) error {
	// Converting these kinds down looks nothing up: no lookups are needed.
	conversion.Lookups{}.MinimizeLegacyKeptData(ctx, t)
	DefaultSpec(&t.Spec.Template.Spec)
	return nil
}

// ValidateCreate applies KThreesConfig's rules to spec.template.spec, checks the
// labels and annotations that will be copied onto the configs, and warns about the
// fields kept but ignored.
func (*KThreesConfigTemplate) ValidateCreate(_ context.Context, t *bootstrapv1.KThreesConfigTemplate) (admission.Warnings, error) {
	specPath := field.NewPath("spec", "template", "spec")
	errs := validateSpec(&t.Spec.Template.Spec, specPath)
	errs = append(errs, t.Spec.Template.ObjectMeta.Validate(field.NewPath("spec", "template", "metadata"))...)
	errs = append(errs, webhookutil.RestoreMarkErrors(t.Spec.Template.ObjectMeta.Annotations, field.NewPath("spec", "template", "metadata"))...)
	return IgnoredFieldWarnings(&t.Spec.Template.Spec, specPath), templateInvalid(t.Name, errs)
}

// ValidateUpdate rejects any change of spec.template.spec, except in Cluster API's
// topology dry runs (see webhookutil.ValidateTemplateSpecUpdate). Metadata, including
// spec.template.metadata, stays editable; spec.template.metadata is validated when it
// changes. Ignored fields are warned about when spec.template.spec changes (a topology
// dry run, or an edit that is then refused).
func (*KThreesConfigTemplate) ValidateUpdate(ctx context.Context, oldT, newT *bootstrapv1.KThreesConfigTemplate) (admission.Warnings, error) {
	// Defaulting the old spec first keeps a template stored before this webhook (with
	// "1.31.4" rather than "v1.31.4") editable in its metadata: the mutating webhook
	// has just defaulted the new one.
	oldSpec := oldT.Spec.Template.Spec.DeepCopy()
	DefaultSpec(oldSpec)
	errs, err := webhookutil.ValidateTemplateSpecUpdate(ctx, newT, oldSpec, &newT.Spec.Template.Spec, immutableTemplateMessage, validateSpec)
	if err != nil {
		return nil, err
	}
	var warnings admission.Warnings
	if !apiequality.Semantic.DeepEqual(*oldSpec, newT.Spec.Template.Spec) {
		warnings = IgnoredFieldWarnings(&newT.Spec.Template.Spec, field.NewPath("spec", "template", "spec"))
	}
	errs = append(errs, webhookutil.ValidateTemplateMetadataUpdate(&oldT.Spec.Template.ObjectMeta, &newT.Spec.Template.ObjectMeta)...)
	if _, before := oldT.Spec.Template.ObjectMeta.Annotations[controlplanev1.EtcdRestoreAnnotation]; !before {
		errs = append(errs, webhookutil.RestoreMarkErrors(newT.Spec.Template.ObjectMeta.Annotations, field.NewPath("spec", "template", "metadata"))...)
	}
	return warnings, templateInvalid(newT.Name, errs)
}

// ValidateDelete allows every deletion: the webhook is not registered for DELETE.
func (*KThreesConfigTemplate) ValidateDelete(context.Context, *bootstrapv1.KThreesConfigTemplate) (admission.Warnings, error) {
	return nil, nil
}

// templateInvalid is configInvalid for KThreesConfigTemplate.
func templateInvalid(name string, errs field.ErrorList) error {
	return webhookutil.Invalid(bootstrapv1.GroupVersion.WithKind("KThreesConfigTemplate").GroupKind(), name, errs)
}
