package conversion

import (
	"context"
	"encoding/json"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// An earlier release kept the other version's whole part (file contents included) as
// a legacy part: restored whole while this version's part was unchanged, a base
// otherwise. Conversion still reads it, in memory only, and writes this release's
// patches in its place; a stored object keeps its legacy part until it is written
// again, which is why the defaulting webhooks call Lookups.MinimizeLegacyKeptData.

// convertLegacyPart is convertPart for a legacy part, or for none.
func convertLegacyPart[F, T any](k kept, name string, from *F, to *T, withBase bool, convert func(*F, *T) error) error {
	var zero T
	*to = zero
	if p, ok := k[name]; ok {
		d, err := digest(*from)
		if err != nil {
			return err
		}
		if d == p.Digest {
			if err := json.Unmarshal(p.Data, to); err != nil {
				return fmt.Errorf("restoring kept %s: %w", name, err)
			}
			return nil
		}
		if withBase {
			if err := json.Unmarshal(p.Data, to); err != nil {
				return fmt.Errorf("reading kept %s: %w", name, err)
			}
		}
	}
	return convert(from, to)
}

// MinimizeLegacyKeptData rewrites the v1beta1 data an earlier release kept on a
// stored (v1beta2) KThreesConfig, KThreesConfigTemplate or KThreesControlPlane into
// this release's form: the v1beta1 object shown for obj stays the same, and nothing
// but what v1beta2 cannot hold stays in the annotation. Data that cannot be read is
// dropped: the v1beta1 view then shows what v1beta2 holds. A KThreesControlPlane's
// v1beta1 view names its infrastructure template's apiVersion, which l looks up, as
// converting down does; the other kinds need no lookup.
func (l Lookups) MinimizeLegacyKeptData(ctx context.Context, obj client.Object) {
	value, ok := obj.GetAnnotations()[v1beta1DataAnnotation]
	if !ok {
		return
	}
	k := kept{}
	if err := json.Unmarshal([]byte(value), &k); err != nil {
		return // unreadable data is ignored by conversion already
	}
	var err error
	switch o := obj.(type) {
	case *bootstrapv1.KThreesConfig:
		err = minimizeLegacyPart(k, configSpecRules, &o.Spec, true, infallible(configSpecToV1Beta1))
		if err == nil {
			err = minimizeLegacyPart(k, configStatusRules, &o.Status, false, infallible(configStatusToV1Beta1))
		}
	case *bootstrapv1.KThreesConfigTemplate:
		err = minimizeLegacyPart(k, templateSpecRules, &o.Spec, true, infallible(templateSpecToV1Beta1))
	case *controlplanev1.KThreesControlPlane:
		err = minimizeLegacyPart(k, controlPlaneSpecRules, &o.Spec, true, l.specToV1Beta1(ctx))
		if err == nil {
			err = minimizeLegacyPart(k, controlPlaneStatusRules, &o.Status, false, infallible(controlPlaneStatusToV1Beta1))
		}
	default:
		return
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Dropping v1beta1 conversion data of an earlier release that cannot be read")
		for _, name := range []string{"spec", "status"} {
			delete(k, name)
		}
	}
	annotations := obj.GetAnnotations()
	delete(annotations, v1beta1DataAnnotation)
	obj.SetAnnotations(annotations)
	if err := k.write(obj, v1beta1DataAnnotation); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Dropping v1beta1 conversion data")
	}
}

// minimizeLegacyPart replaces the legacy part named rules.name with the patch that
// gives the same v1beta1 part for current.
func minimizeLegacyPart[F, T any](k kept, rules partRules, current *T, withBase bool, down func(*T, *F) error) error {
	if _, ok := k[rules.name]; !ok {
		return nil
	}
	var shown F
	if err := convertLegacyPart(k, rules.name, current, &shown, withBase, down); err != nil {
		return err
	}
	delete(k, rules.name)
	return keepPart(k, rules, &shown, current, down)
}
