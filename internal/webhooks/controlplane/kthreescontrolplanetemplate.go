package controlplane

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

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
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

// Default normalizes the embedded KThreesConfigSpec; see defaultTemplateSpec.
func (*KThreesControlPlaneTemplate) Default(_ context.Context, t *controlplanev1.KThreesControlPlaneTemplate) error {
	defaultTemplateSpec(&t.Spec.Template.Spec)
	return nil
}

// ValidateCreate applies the control plane's rules to spec.template.spec and checks
// the labels and annotations that will be copied onto control planes and machines.
func (*KThreesControlPlaneTemplate) ValidateCreate(_ context.Context, t *controlplanev1.KThreesControlPlaneTemplate) (admission.Warnings, error) {
	errs := validateTemplateSpec(&t.Spec.Template.Spec, field.NewPath("spec", "template", "spec"))
	errs = append(errs, t.Spec.Template.ObjectMeta.Validate(field.NewPath("spec", "template", "metadata"))...)
	return nil, templateInvalid(t.Name, errs)
}

// ValidateUpdate rejects any change of spec.template.spec; metadata, including
// spec.template.metadata, stays editable and is validated when it changes.
//
// Cluster API's topology controller server-side-applies ClusterClass templates in
// dry-run, marked with the topology.cluster.x-k8s.io/dry-run annotation, to find out
// whether a template must be rotated; the provider contract requires such requests to
// skip the immutability check (nothing is stored). The changed spec is still
// validated.
func (*KThreesControlPlaneTemplate) ValidateUpdate(ctx context.Context, oldT, newT *controlplanev1.KThreesControlPlaneTemplate) (admission.Warnings, error) {
	var errs field.ErrorList
	specPath := field.NewPath("spec", "template", "spec")

	// Defaulting the old spec keeps a template stored before this webhook editable in
	// its metadata: the mutating webhook has just defaulted the new one.
	oldSpec := oldT.Spec.Template.Spec.DeepCopy()
	defaultTemplateSpec(oldSpec)
	if changed := changedFields(oldSpec, &newT.Spec.Template.Spec); len(changed) > 0 {
		req, err := admission.RequestFromContext(ctx)
		if err != nil {
			return nil, apierrors.NewInternalError(fmt.Errorf("admission request missing from the webhook's context: %w", err))
		}
		if topology.IsDryRunRequest(req, newT) {
			errs = append(errs, validateTemplateSpec(&newT.Spec.Template.Spec, specPath)...)
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
func (*KThreesControlPlaneTemplate) ValidateDelete(context.Context, *controlplanev1.KThreesControlPlaneTemplate) (admission.Warnings, error) {
	return nil, nil
}

// changedFields lists the top-level fields (by JSON name) that differ between two
// specs, so that the immutability error tells the user what they touched. It returns
// nil when the specs are semantically equal.
func changedFields[T any](oldSpec, newSpec *T) []string {
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
		// Semantically different but serialized alike: name the spec rather than nothing.
		return []string{"spec"}
	}
	slices.Sort(changed)
	return changed
}

func topLevelFields(spec any) (map[string]json.RawMessage, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	fields := map[string]json.RawMessage{}
	return fields, json.Unmarshal(raw, &fields)
}

// templateInvalid is controlPlaneInvalid for KThreesControlPlaneTemplate.
func templateInvalid(name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(controlplanev1.GroupVersion.WithKind("KThreesControlPlaneTemplate").GroupKind(), name, errs)
}
