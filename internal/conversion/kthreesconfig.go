package conversion

import (
	"context"

	"k8s.io/utils/ptr"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// Every converter follows the same steps for each part (spec, status):
//  1. while this side's part is unchanged since the other side's was kept (see
//     preserve.go), convert it and apply the kept patch, which gives the other
//     side's part exactly;
//  2. otherwise convert this side's fields over a base: going up, the kept v1beta2
//     patch, so fields v1beta1 lacks survive an edit made through v1beta1; going
//     down, the kept v1beta1 spec patch, but never the kept v1beta1 status, which the
//     controllers have since replaced;
//  3. going up, take the withheld fields from the stored object (withheld.go);
//  4. keep the patch from converting the result back to this side's part, unless
//     there is nothing in it.

// ConvertKThreesConfigV1Beta1ToHub converts a v1beta1 KThreesConfig to v1beta2.
func (l Lookups) ConvertKThreesConfigV1Beta1ToHub(ctx context.Context, src *bootstrapv1beta1.KThreesConfig, dst *bootstrapv1.KThreesConfig) error {
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	hub, err := takeKept(dst, hubDataAnnotation)
	if err != nil {
		return err
	}
	if err := convertPart(hub, configSpecRules, &src.Spec, &dst.Spec, true, infallible(configSpecToHub)); err != nil {
		return err
	}
	if err := restoreWithheld(ctx, l.Stored, hub, configSpecRules, dst, &dst.Spec, configSpecOf); err != nil {
		return err
	}
	if err := convertPart(hub, configStatusRules, &src.Status, &dst.Status, true, infallible(configStatusToHub)); err != nil {
		return err
	}
	old := kept{}
	if err := keepPart(old, configSpecRules, &src.Spec, &dst.Spec, infallible(configSpecToV1Beta1)); err != nil {
		return err
	}
	// bootstrapData, an obsolete inline copy of the bootstrap data (the join token in
	// it), is withheld by configStatusRules and so dropped.
	if err := keepPart(old, configStatusRules, &src.Status, &dst.Status, infallible(configStatusToV1Beta1)); err != nil {
		return err
	}
	return old.write(dst, v1beta1DataAnnotation)
}

func configSpecOf(c *bootstrapv1.KThreesConfig) *bootstrapv1.KThreesConfigSpec { return &c.Spec }

func templateSpecOf(t *bootstrapv1.KThreesConfigTemplate) *bootstrapv1.KThreesConfigTemplateSpec {
	return &t.Spec
}

// ConvertKThreesConfigHubToV1Beta1 converts a v1beta2 KThreesConfig to v1beta1.
func (l Lookups) ConvertKThreesConfigHubToV1Beta1(ctx context.Context, src *bootstrapv1.KThreesConfig, dst *bootstrapv1beta1.KThreesConfig) error {
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	old := takeKeptOrNothing(ctx, dst, v1beta1DataAnnotation)
	if err := downPart(ctx, dst, old, configSpecRules, &src.Spec, &dst.Spec, true, infallible(configSpecToV1Beta1)); err != nil {
		return err
	}
	if err := downPart(ctx, dst, old, configStatusRules, &src.Status, &dst.Status, false, infallible(configStatusToV1Beta1)); err != nil {
		return err
	}
	hub := kept{}
	if err := keepPart(hub, configSpecRules, &src.Spec, &dst.Spec, infallible(configSpecToHub)); err != nil {
		return err
	}
	if err := keepPart(hub, configStatusRules, &src.Status, &dst.Status, infallible(configStatusToHub)); err != nil {
		return err
	}
	return hub.write(dst, hubDataAnnotation)
}

// configStatusToHub converts what the v1beta1 bootstrap contract's status shares
// with v1beta2's. Its conditions (with severity), failureReason and failureMessage
// have no v1beta2 home: they are kept, and dropped once the controller writes a
// status of its own. bootstrapData is dropped (see ConvertKThreesConfigV1Beta1ToHub).
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

// templateSpecToHub and templateSpecToV1Beta1 convert a template's spec: its
// KThreesConfigSpec; the v1beta2 template's metadata, which v1beta1 lacks, is kept.
func templateSpecToHub(in *bootstrapv1beta1.KThreesConfigTemplateSpec, out *bootstrapv1.KThreesConfigTemplateSpec) {
	configSpecToHub(&in.Template.Spec, &out.Template.Spec)
}

func templateSpecToV1Beta1(in *bootstrapv1.KThreesConfigTemplateSpec, out *bootstrapv1beta1.KThreesConfigTemplateSpec) {
	configSpecToV1Beta1(&in.Template.Spec, &out.Template.Spec)
}

// ConvertKThreesConfigTemplateV1Beta1ToHub converts a v1beta1 KThreesConfigTemplate to v1beta2.
func (l Lookups) ConvertKThreesConfigTemplateV1Beta1ToHub(ctx context.Context, src *bootstrapv1beta1.KThreesConfigTemplate, dst *bootstrapv1.KThreesConfigTemplate) error {
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	hub, err := takeKept(dst, hubDataAnnotation)
	if err != nil {
		return err
	}
	if err := convertPart(hub, templateSpecRules, &src.Spec, &dst.Spec, true, infallible(templateSpecToHub)); err != nil {
		return err
	}
	if err := restoreWithheld(ctx, l.Stored, hub, templateSpecRules, dst, &dst.Spec, templateSpecOf); err != nil {
		return err
	}
	old := kept{}
	if err := keepPart(old, templateSpecRules, &src.Spec, &dst.Spec, infallible(templateSpecToV1Beta1)); err != nil {
		return err
	}
	return old.write(dst, v1beta1DataAnnotation)
}

// ConvertKThreesConfigTemplateHubToV1Beta1 converts a v1beta2 KThreesConfigTemplate to v1beta1.
func (l Lookups) ConvertKThreesConfigTemplateHubToV1Beta1(ctx context.Context, src *bootstrapv1.KThreesConfigTemplate, dst *bootstrapv1beta1.KThreesConfigTemplate) error {
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	old := takeKeptOrNothing(ctx, dst, v1beta1DataAnnotation)
	if err := downPart(ctx, dst, old, templateSpecRules, &src.Spec, &dst.Spec, true, infallible(templateSpecToV1Beta1)); err != nil {
		return err
	}
	hub := kept{}
	if err := keepPart(hub, templateSpecRules, &src.Spec, &dst.Spec, infallible(templateSpecToHub)); err != nil {
		return err
	}
	return hub.write(dst, hubDataAnnotation)
}
