package controlplane

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/webhooks/webhookutil"
)

// +kubebuilder:webhook:verbs=create;update,path=/mutate-controlplane-cluster-x-k8s-io-v1beta2-kthreescontrolplanetemplate,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,groups=controlplane.cluster.x-k8s.io,resources=kthreescontrolplanetemplates,versions=v1beta2,name=default.kthreescontrolplanetemplate.controlplane.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update,path=/validate-controlplane-cluster-x-k8s-io-v1beta2-kthreescontrolplanetemplate,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=controlplane.cluster.x-k8s.io,resources=kthreescontrolplanetemplates,versions=v1beta2,name=validation.kthreescontrolplanetemplate.controlplane.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// immutableTemplateMessage explains the rule and the way out: the topology controller
// copies the template into the control plane, so an edit in place would leave running
// control planes silently different from their template; pointing the ClusterClass
// at a new template is what makes the topology controller roll the change out.
const immutableTemplateMessage = "KThreesControlPlaneTemplate spec.template.spec is immutable; create a new template and point the ClusterClass at it"

// KThreesControlPlaneTemplate is the defaulting and validating webhook of
// KThreesControlPlaneTemplate.
type KThreesControlPlaneTemplate struct{}

var (
	_ admission.Defaulter[*controlplanev1.KThreesControlPlaneTemplate] = &KThreesControlPlaneTemplate{}
	_ admission.Validator[*controlplanev1.KThreesControlPlaneTemplate] = &KThreesControlPlaneTemplate{}
)

// Default normalizes the embedded KThreesConfigSpec and moves cluster-api-k3s's
// machine-template durations; see defaultTemplateSpec.
func (*KThreesControlPlaneTemplate) Default(_ context.Context, t *controlplanev1.KThreesControlPlaneTemplate) error {
	defaultTemplateSpec(&t.Spec.Template.Spec)
	return nil
}

// ValidateCreate applies the control plane's rules to spec.template.spec, checks the
// labels and annotations that will be copied onto control planes and machines, and
// warns about the fields kept for cluster-api-k3s but ignored (templateWarnings).
func (*KThreesControlPlaneTemplate) ValidateCreate(_ context.Context, t *controlplanev1.KThreesControlPlaneTemplate) (admission.Warnings, error) {
	errs := validateTemplateSpec(&t.Spec.Template.Spec, field.NewPath("spec", "template", "spec"))
	errs = append(errs, templateLabelsAndAnnotations(&t.Spec.Template.ObjectMeta).Validate(field.NewPath("spec", "template", "metadata"))...)
	return templateWarnings(t), templateInvalid(t.Name, errs)
}

// ValidateUpdate rejects any change of spec.template.spec, except in Cluster API's
// topology dry runs (see webhookutil.ValidateTemplateSpecUpdate); metadata, including
// spec.template.metadata, stays editable and is validated when it changes. The
// warnings come when spec.template changes, not with every metadata update.
func (*KThreesControlPlaneTemplate) ValidateUpdate(ctx context.Context, oldT, newT *controlplanev1.KThreesControlPlaneTemplate) (admission.Warnings, error) {
	// Defaulting the old spec keeps a template stored before this webhook editable in
	// its metadata: the mutating webhook has just defaulted the new one.
	oldSpec := oldT.Spec.Template.Spec.DeepCopy()
	defaultTemplateSpec(oldSpec)
	errs, err := webhookutil.ValidateTemplateSpecUpdate(ctx, newT, oldSpec, &newT.Spec.Template.Spec, immutableTemplateMessage, validateTemplateSpec)
	if err != nil {
		return nil, err
	}
	var warnings admission.Warnings
	if !apiequality.Semantic.DeepEqual(*oldSpec, newT.Spec.Template.Spec) ||
		!apiequality.Semantic.DeepEqual(oldT.Spec.Template.ObjectMeta, newT.Spec.Template.ObjectMeta) {
		warnings = templateWarnings(newT)
	}
	errs = append(errs, webhookutil.ValidateTemplateMetadataUpdate(templateLabelsAndAnnotations(&oldT.Spec.Template.ObjectMeta),
		templateLabelsAndAnnotations(&newT.Spec.Template.ObjectMeta))...)
	return warnings, templateInvalid(newT.Name, errs)
}

// ValidateDelete allows every deletion: the webhook is not registered for DELETE.
func (*KThreesControlPlaneTemplate) ValidateDelete(context.Context, *controlplanev1.KThreesControlPlaneTemplate) (admission.Warnings, error) {
	return nil, nil
}

// templateInvalid is controlPlaneInvalid for KThreesControlPlaneTemplate.
func templateInvalid(name string, errs field.ErrorList) error {
	return webhookutil.Invalid(controlplanev1.GroupVersion.WithKind("KThreesControlPlaneTemplate").GroupKind(), name, errs)
}
