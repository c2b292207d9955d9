package bootstrap

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/cluster-api/util/topology"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
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
// cloned from the template are already normalized.
func (*KThreesConfigTemplate) Default(_ context.Context, t *bootstrapv1.KThreesConfigTemplate) error {
	DefaultSpec(&t.Spec.Template.Spec)
	return nil
}

// ValidateCreate applies KThreesConfig's rules to spec.template.spec, and checks the
// labels and annotations that will be copied onto the configs.
func (*KThreesConfigTemplate) ValidateCreate(_ context.Context, t *bootstrapv1.KThreesConfigTemplate) (admission.Warnings, error) {
	errs := validateSpec(&t.Spec.Template.Spec, field.NewPath("spec", "template", "spec"))
	errs = append(errs, t.Spec.Template.ObjectMeta.Validate(field.NewPath("spec", "template", "metadata"))...)
	return nil, templateInvalid(t.Name, errs)
}

// ValidateUpdate rejects any change of spec.template.spec. Metadata, including
// spec.template.metadata, stays editable; spec.template.metadata is validated when it
// changes.
//
// Cluster API's topology controller server-side-applies ClusterClass templates in
// dry-run, marked with the topology.cluster.x-k8s.io/dry-run annotation, to find out
// whether a template must be rotated; the bootstrap provider contract requires that
// such requests skip the immutability check (nothing is stored). The changed spec is
// then still validated.
func (*KThreesConfigTemplate) ValidateUpdate(ctx context.Context, oldT, newT *bootstrapv1.KThreesConfigTemplate) (admission.Warnings, error) {
	var errs field.ErrorList
	specPath := field.NewPath("spec", "template", "spec")

	// Defaulting the old spec first keeps a template stored before this webhook (with
	// "1.31.4" rather than "v1.31.4") editable in its metadata: the mutating webhook
	// has just defaulted the new one.
	oldSpec := oldT.Spec.Template.Spec.DeepCopy()
	DefaultSpec(oldSpec)
	if changed := changedFields(oldSpec, &newT.Spec.Template.Spec); len(changed) > 0 {
		req, err := admission.RequestFromContext(ctx)
		if err != nil {
			return nil, apierrors.NewInternalError(fmt.Errorf("admission request missing from the webhook's context: %w", err))
		}
		if topology.IsDryRunRequest(req, newT) {
			errs = append(errs, validateSpec(&newT.Spec.Template.Spec, specPath)...)
		} else {
			errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("%s (changed: %s)",
				immutableTemplateMessage, strings.Join(changed, ", "))))
		}
	}

	if !apiequality.Semantic.DeepEqual(oldT.Spec.Template.ObjectMeta, newT.Spec.Template.ObjectMeta) {
		errs = append(errs, newT.Spec.Template.ObjectMeta.Validate(field.NewPath("spec", "template", "metadata"))...)
	}
	return nil, templateInvalid(newT.Name, errs)
}

// ValidateDelete allows every deletion: the webhook is not registered for DELETE.
func (*KThreesConfigTemplate) ValidateDelete(context.Context, *bootstrapv1.KThreesConfigTemplate) (admission.Warnings, error) {
	return nil, nil
}

// changedFields lists the top-level fields (by JSON name) that differ between two
// specs, so the immutability error tells the user what they touched. It returns nil
// when the specs are semantically equal.
func changedFields(oldSpec, newSpec *bootstrapv1.KThreesConfigSpec) []string {
	if apiequality.Semantic.DeepEqual(*oldSpec, *newSpec) {
		return nil
	}
	oldFields, errOld := topLevelFields(oldSpec)
	newFields, errNew := topLevelFields(newSpec)
	if errOld != nil || errNew != nil {
		// Cannot happen for these plain types; still report the change itself.
		return []string{"spec"}
	}
	var changed []string
	for name, v := range oldFields {
		if nv, ok := newFields[name]; !ok || string(nv) != string(v) {
			changed = append(changed, name)
		}
	}
	for name := range newFields {
		if _, ok := oldFields[name]; !ok {
			changed = append(changed, name)
		}
	}
	if len(changed) == 0 {
		// Semantically different but serialized alike: name no field rather than none.
		return []string{"spec"}
	}
	slices.Sort(changed)
	return changed
}

func topLevelFields(spec *bootstrapv1.KThreesConfigSpec) (map[string]json.RawMessage, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	fields := map[string]json.RawMessage{}
	return fields, json.Unmarshal(raw, &fields)
}

// templateInvalid is configInvalid for KThreesConfigTemplate.
func templateInvalid(name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(bootstrapv1.GroupVersion.WithKind("KThreesConfigTemplate").GroupKind(), name, errs)
}
