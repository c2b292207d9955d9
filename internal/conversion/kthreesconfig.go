package conversion

import (
	"context"

	"k8s.io/utils/ptr"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// Every converter follows the same steps for each part (spec, status):
//  1. restore the other version's part whole when this side is unchanged since it
//     was kept (see preserve.go);
//  2. otherwise convert this side's fields over a base: going up, the kept v1beta2
//     part, so fields v1beta1 lacks survive an edit made through v1beta1; going
//     down, the kept v1beta1 spec, but never the kept v1beta1 status, which the
//     controllers have since replaced;
//  3. keep this side's part on the result, unless converting the result back gives
//     it anyway.

// ConvertKThreesConfigV1Beta1ToHub converts a v1beta1 KThreesConfig to v1beta2.
func ConvertKThreesConfigV1Beta1ToHub(_ context.Context, src *bootstrapv1beta1.KThreesConfig, dst *bootstrapv1.KThreesConfig) error {
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	hub, err := takeKept(dst, hubDataAnnotation)
	if err != nil {
		return err
	}
	if ok, err := hub.restore("spec", src.Spec, &dst.Spec); err != nil {
		return err
	} else if !ok {
		dst.Spec = bootstrapv1.KThreesConfigSpec{}
		if err := hub.base("spec", &dst.Spec); err != nil {
			return err
		}
		configSpecToHub(&src.Spec, &dst.Spec)
	}
	if ok, err := hub.restore("status", src.Status, &dst.Status); err != nil {
		return err
	} else if !ok {
		dst.Status = bootstrapv1.KThreesConfigStatus{}
		if err := hub.base("status", &dst.Status); err != nil {
			return err
		}
		configStatusToHub(&src.Status, &dst.Status)
	}

	old := kept{}
	var spec bootstrapv1beta1.KThreesConfigSpec
	configSpecToV1Beta1(&dst.Spec, &spec)
	if err := old.keepUnless("spec", src.Spec, dst.Spec, spec); err != nil {
		return err
	}
	var status bootstrapv1beta1.KThreesConfigStatus
	configStatusToV1Beta1(&dst.Status, &status)
	if err := old.keepUnless("status", src.Status, dst.Status, status); err != nil {
		return err
	}
	return old.write(dst, v1beta1DataAnnotation)
}

// ConvertKThreesConfigHubToV1Beta1 converts a v1beta2 KThreesConfig to v1beta1.
func ConvertKThreesConfigHubToV1Beta1(_ context.Context, src *bootstrapv1.KThreesConfig, dst *bootstrapv1beta1.KThreesConfig) error {
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	old, err := takeKept(dst, v1beta1DataAnnotation)
	if err != nil {
		return err
	}
	if ok, err := old.restore("spec", src.Spec, &dst.Spec); err != nil {
		return err
	} else if !ok {
		dst.Spec = bootstrapv1beta1.KThreesConfigSpec{}
		if err := old.base("spec", &dst.Spec); err != nil {
			return err
		}
		configSpecToV1Beta1(&src.Spec, &dst.Spec)
	}
	if ok, err := old.restore("status", src.Status, &dst.Status); err != nil {
		return err
	} else if !ok {
		dst.Status = bootstrapv1beta1.KThreesConfigStatus{}
		configStatusToV1Beta1(&src.Status, &dst.Status)
	}

	hub := kept{}
	var spec bootstrapv1.KThreesConfigSpec
	configSpecToHub(&dst.Spec, &spec)
	if err := hub.keepUnless("spec", src.Spec, dst.Spec, spec); err != nil {
		return err
	}
	var status bootstrapv1.KThreesConfigStatus
	configStatusToHub(&dst.Status, &status)
	if err := hub.keepUnless("status", src.Status, dst.Status, status); err != nil {
		return err
	}
	return hub.write(dst, hubDataAnnotation)
}

// configStatusToHub converts what the v1beta1 bootstrap contract's status shares
// with v1beta2's. Its conditions (with severity), failureReason, failureMessage and
// bootstrapData have no v1beta2 home: they are kept, and dropped once the
// controller writes a status of its own.
func configStatusToHub(in *bootstrapv1beta1.KThreesConfigStatus, out *bootstrapv1.KThreesConfigStatus) {
	out.DataSecretName = ptr.Deref(in.DataSecretName, "")
	out.ObservedGeneration = in.ObservedGeneration
	// ready means the data Secret exists; unset and false say the same.
	if in.Ready != ptr.Deref(out.Initialization.DataSecretCreated, false) {
		out.Initialization.DataSecretCreated = ptr.To(in.Ready)
	}
}

func configStatusToV1Beta1(in *bootstrapv1.KThreesConfigStatus, out *bootstrapv1beta1.KThreesConfigStatus) {
	out.DataSecretName = nil
	if in.DataSecretName != "" {
		out.DataSecretName = ptr.To(in.DataSecretName)
	}
	out.ObservedGeneration = in.ObservedGeneration
	out.Ready = ptr.Deref(in.Initialization.DataSecretCreated, false)
}

// ConvertKThreesConfigTemplateV1Beta1ToHub converts a v1beta1 KThreesConfigTemplate to v1beta2.
func ConvertKThreesConfigTemplateV1Beta1ToHub(_ context.Context, src *bootstrapv1beta1.KThreesConfigTemplate, dst *bootstrapv1.KThreesConfigTemplate) error {
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	hub, err := takeKept(dst, hubDataAnnotation)
	if err != nil {
		return err
	}
	if ok, err := hub.restore("spec", src.Spec, &dst.Spec); err != nil {
		return err
	} else if !ok {
		dst.Spec = bootstrapv1.KThreesConfigTemplateSpec{}
		if err := hub.base("spec", &dst.Spec); err != nil {
			return err
		}
		configSpecToHub(&src.Spec.Template.Spec, &dst.Spec.Template.Spec)
	}
	old := kept{}
	var spec bootstrapv1beta1.KThreesConfigTemplateSpec
	configSpecToV1Beta1(&dst.Spec.Template.Spec, &spec.Template.Spec)
	if err := old.keepUnless("spec", src.Spec, dst.Spec, spec); err != nil {
		return err
	}
	return old.write(dst, v1beta1DataAnnotation)
}

// ConvertKThreesConfigTemplateHubToV1Beta1 converts a v1beta2 KThreesConfigTemplate to
// v1beta1; the template's metadata, which v1beta1 lacks, is kept.
func ConvertKThreesConfigTemplateHubToV1Beta1(_ context.Context, src *bootstrapv1.KThreesConfigTemplate, dst *bootstrapv1beta1.KThreesConfigTemplate) error {
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	old, err := takeKept(dst, v1beta1DataAnnotation)
	if err != nil {
		return err
	}
	if ok, err := old.restore("spec", src.Spec, &dst.Spec); err != nil {
		return err
	} else if !ok {
		dst.Spec = bootstrapv1beta1.KThreesConfigTemplateSpec{}
		if err := old.base("spec", &dst.Spec); err != nil {
			return err
		}
		configSpecToV1Beta1(&src.Spec.Template.Spec, &dst.Spec.Template.Spec)
	}
	hub := kept{}
	var spec bootstrapv1.KThreesConfigTemplateSpec
	configSpecToHub(&dst.Spec.Template.Spec, &spec.Template.Spec)
	if err := hub.keepUnless("spec", src.Spec, dst.Spec, spec); err != nil {
		return err
	}
	return hub.write(dst, hubDataAnnotation)
}
