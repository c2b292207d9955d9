package controlplane

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/conversion"
	bootstrapwebhooks "github.com/capk3s/capk3s/internal/webhooks/bootstrap"
)

// +kubebuilder:webhook:verbs=create;update,path=/mutate-controlplane-cluster-x-k8s-io-v1beta2-kthreescontrolplane,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,groups=controlplane.cluster.x-k8s.io,resources=kthreescontrolplanes,versions=v1beta2,name=default.kthreescontrolplane.controlplane.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update,path=/validate-controlplane-cluster-x-k8s-io-v1beta2-kthreescontrolplane,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=controlplane.cluster.x-k8s.io,resources=kthreescontrolplanes,versions=v1beta2,name=validation.kthreescontrolplane.controlplane.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// KThreesControlPlane is the defaulting and validating webhook of KThreesControlPlane.
type KThreesControlPlane struct {
	// Conversion is what Default rewrites an earlier release's v1beta1 data with
	// (conversion.Lookups.MinimizeLegacyKeptData): the manager's own, as its
	// converter's. Its zero value shows an infrastructure template whose version
	// is not kept by its group alone, as conversion does without a getter.
	Conversion conversion.Lookups
}

var (
	_ admission.Defaulter[*controlplanev1.KThreesControlPlane] = &KThreesControlPlane{}
	_ admission.Validator[*controlplanev1.KThreesControlPlane] = &KThreesControlPlane{}
)

// Default fills the spec and converts cluster-api-k3s's machine-template fields; see
// defaultControlPlane. First the v1beta1 conversion data an earlier release kept
// whole (the file contents in it) is rewritten as the spec it was kept for (see
// conversion.Lookups.MinimizeLegacyKeptData): an object stored then loses it on its next write.
func (w *KThreesControlPlane) Default(ctx context.Context, cp *controlplanev1.KThreesControlPlane) error {
	w.Conversion.MinimizeLegacyKeptData(ctx, cp)
	defaultControlPlane(&cp.Spec, cp)
	return nil
}

// ValidateCreate rejects a spec that breaks a rule of validateSpec, and warns about
// the fields kept for cluster-api-k3s but ignored (controlPlaneWarnings).
func (*KThreesControlPlane) ValidateCreate(_ context.Context, cp *controlplanev1.KThreesControlPlane) (admission.Warnings, error) {
	specPath := field.NewPath("spec")
	warnings := append(controlPlaneWarnings(&cp.Spec, specPath),
		taintsGateWarning(nil, cp.Spec.MachineTemplate.Spec.Taints, specPath.Child("machineTemplate", "spec", "taints"))...)
	return warnings, controlPlaneInvalid(cp.Name, validateSpec(&cp.Spec, cp.Namespace, specPath))
}

// ValidateUpdate validates a changed spec as on creation, plus the rules about the
// change itself: the version moves at most one minor version up, the cluster's
// network settings stay, and so do the settings k3s servers must share (critical.go).
//
// An unchanged spec is let through, so that a control plane stored before this
// webhook (or before a rule was added) keeps its metadata editable: finalizers, owner
// references and labels are written by CAPI and by the controller. The old spec is
// defaulted first so that the defaulting just applied to the new one is not mistaken
// for a change. The warnings come with spec changes only, like the checks.
func (*KThreesControlPlane) ValidateUpdate(_ context.Context, oldCP, newCP *controlplanev1.KThreesControlPlane) (admission.Warnings, error) {
	oldSpec := oldCP.Spec.DeepCopy()
	defaultControlPlane(oldSpec, oldCP)
	if apiequality.Semantic.DeepEqual(*oldSpec, newCP.Spec) {
		return nil, nil
	}
	specPath := field.NewPath("spec")
	errs := validateSpec(&newCP.Spec, newCP.Namespace, specPath)
	errs = append(errs, validateVersionChange(oldSpec.Version, newCP.Spec.Version, specPath.Child("version"))...)
	errs = append(errs, validateImmutable(oldSpec, &newCP.Spec, specPath)...)
	errs = append(errs, validateCriticalChange(oldSpec, &newCP.Spec, specPath)...)
	errs = append(errs, bootstrapwebhooks.ValidateDatastoreChange(&oldSpec.KThreesConfigSpec.ServerConfig,
		&newCP.Spec.KThreesConfigSpec.ServerConfig, specPath.Child("kthreesConfigSpec", "serverConfig"))...)
	warnings := append(controlPlaneWarnings(&newCP.Spec, specPath), taintsGateWarning(oldSpec.MachineTemplate.Spec.Taints,
		newCP.Spec.MachineTemplate.Spec.Taints, specPath.Child("machineTemplate", "spec", "taints"))...)
	return warnings, controlPlaneInvalid(newCP.Name, errs)
}

// ValidateDelete allows every deletion: the webhook is not registered for DELETE.
func (*KThreesControlPlane) ValidateDelete(context.Context, *controlplanev1.KThreesControlPlane) (admission.Warnings, error) {
	return nil, nil
}

// controlPlaneInvalid returns nil for no errors, else the Invalid status error that
// the apiserver relays to the client with every field error.
func controlPlaneInvalid(name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(controlplanev1.GroupVersion.WithKind("KThreesControlPlane").GroupKind(), name, errs)
}
