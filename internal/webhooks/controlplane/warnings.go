package controlplane

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	bootstrapwebhooks "github.com/capk3s/capk3s/internal/webhooks/bootstrap"
)

// The fields that the schema keeps for cluster-api-k3s's manifests but nothing reads
// get an admission warning each, as in the bootstrap webhooks: a kept field must not
// look as if it acted. Each warning names the field and says why; none is longer
// than the 256 characters after which the apiserver may cut it.

// templateRefWarning says why a template's cluster-api-k3s infrastructureRef does nothing.
const templateRefWarning = "is ignored: a ClusterClass names the servers' infrastructure template " +
	"(spec.controlPlane.machineInfrastructure.templateRef), and Cluster API sets it on each control plane"

// controlPlaneWarnings are the warnings about a defaulted control plane spec at fldPath.
func controlPlaneWarnings(spec *controlplanev1.KThreesControlPlaneSpec, fldPath *field.Path) admission.Warnings {
	warnings := bootstrapwebhooks.IgnoredFieldWarnings(&spec.KThreesConfigSpec, fldPath.Child("kthreesConfigSpec"))
	warnings = append(warnings, bootstrapwebhooks.K3sVersionWarnings(&spec.KThreesConfigSpec, spec.Version, fldPath.Child("version"))...)
	if ref := *deprecatedRef(&spec.MachineTemplate); ref != nil {
		mtPath := fldPath.Child("machineTemplate")
		warnings = append(warnings, ignoredRefPartWarnings(ref, mtPath.Child("infrastructureRef"), mtPath.Child("spec", "infrastructureRef"))...)
	}
	return warnings
}

// ignoredRefPartWarnings warns about the parts of a cluster-api-k3s reference at
// fldPath that its replacement at newPath cannot hold, and that defaulting therefore
// left in place with the rest of the reference.
func ignoredRefPartWarnings(ref *controlplanev1.DeprecatedObjectReference, fldPath, newPath *field.Path) admission.Warnings {
	parts := []struct {
		name string
		set  bool
	}{
		{"uid", ref.UID != ""},
		{"resourceVersion", ref.ResourceVersion != ""},
		{"fieldPath", ref.FieldPath != ""},
	}
	var warnings admission.Warnings
	for _, p := range parts {
		if p.set {
			warnings = append(warnings, fldPath.Child(p.name).String()+" is ignored: "+newPath.String()+
				", which replaces this reference, names the template by apiGroup, kind and name only; the reference is kept as written")
		}
	}
	return warnings
}

// templateWarnings are the warnings about a defaulted KThreesControlPlaneTemplate.
func templateWarnings(t *controlplanev1.KThreesControlPlaneTemplate) admission.Warnings {
	templatePath := field.NewPath("spec", "template")
	var warnings admission.Warnings
	metaPath := templatePath.Child("metadata")
	for _, f := range ignoredMetadataFields(&t.Spec.Template.ObjectMeta) {
		if f.set {
			warnings = append(warnings, metaPath.Child(f.name).String()+" is ignored: only a template's labels and annotations are used; "+f.why)
		}
	}
	spec := &t.Spec.Template.Spec
	specPath := templatePath.Child("spec")
	warnings = append(warnings, bootstrapwebhooks.IgnoredFieldWarnings(&spec.KThreesConfigSpec, specPath.Child("kthreesConfigSpec"))...)
	if spec.MachineTemplate != nil {
		// An empty reference, which cluster-api-k3s's Go types write whenever the
		// machine template is set, says nothing that could be ignored.
		if ref := templateDeprecatedRef(spec.MachineTemplate); ref != nil && *ref != (controlplanev1.DeprecatedObjectReference{}) {
			warnings = append(warnings, specPath.Child("machineTemplate", "infrastructureRef").String()+" "+templateRefWarning)
		}
	}
	return warnings
}

// templateLabelsAndAnnotations is the part of a template's metadata that is used, in
// the type Cluster API validates.
func templateLabelsAndAnnotations(m *controlplanev1.KThreesControlPlaneTemplateObjectMeta) *clusterv1.ObjectMeta {
	return &clusterv1.ObjectMeta{Labels: m.Labels, Annotations: m.Annotations}
}
