package webhookutil

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/topology"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// ValidateTemplateSpecUpdate checks an update of newObj's spec.template.spec from
// oldSpec to newSpec. An unchanged spec passes. A changed one is Forbidden, with
// message and the changed top-level fields, except in Cluster API's topology dry
// runs: the topology controller server-side-applies ClusterClass templates in dry
// run, marked with the topology.cluster.x-k8s.io/dry-run annotation, to find out
// whether a template must be rotated, and the provider contracts require such
// requests to skip the immutability check (nothing is stored). The changed spec is
// then still checked with validate.
//
// Callers default oldSpec first, so that a template stored before its webhook
// existed stays editable in its metadata: the mutating webhook has just defaulted
// newSpec. The error is an internal one when ctx carries no admission request.
func ValidateTemplateSpecUpdate[S any](ctx context.Context, newObj metav1.Object, oldSpec, newSpec *S,
	message string, validate func(*S, *field.Path) field.ErrorList) (field.ErrorList, error) {
	changed := changedFields(oldSpec, newSpec)
	if len(changed) == 0 {
		return nil, nil
	}
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("admission request missing from the webhook's context: %w", err))
	}
	specPath := field.NewPath("spec", "template", "spec")
	if topology.IsDryRunRequest(req, newObj) {
		return validate(newSpec, specPath), nil
	}
	return field.ErrorList{field.Forbidden(specPath, fmt.Sprintf("%s (changed: %s)", message, strings.Join(changed, ", ")))}, nil
}

// ValidateTemplateMetadataUpdate validates spec.template.metadata, which stays
// editable, only when it changed: labels and annotations stored before the webhook
// existed must not block other edits.
func ValidateTemplateMetadataUpdate(oldMeta, newMeta *clusterv1.ObjectMeta) field.ErrorList {
	if apiequality.Semantic.DeepEqual(oldMeta, newMeta) {
		return nil
	}
	return newMeta.Validate(field.NewPath("spec", "template", "metadata"))
}

// Invalid is the error the apiserver returns for errs about the object kind/name, or
// nil when errs is empty.
func Invalid(kind schema.GroupKind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(kind, name, errs)
}

// changedFields lists the top-level fields (by JSON name) that differ between two
// specs, so that the immutability error tells the user what they touched. It returns
// nil when the specs are semantically equal.
func changedFields[S any](oldSpec, newSpec *S) []string {
	if apiequality.Semantic.DeepEqual(*oldSpec, *newSpec) {
		return nil
	}
	oldFields, errOld := topLevelFields(oldSpec)
	newFields, errNew := topLevelFields(newSpec)
	if errOld != nil || errNew != nil {
		// Cannot happen for the API's plain types; still report the change itself.
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
