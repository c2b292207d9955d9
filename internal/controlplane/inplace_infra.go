package controlplane

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/external"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/serverplan"
)

// The API reads an in-place update needs for a server's infrastructure machine: what
// desiredstate.go computes from the templates is turned into what the API server would
// store. Servers' infrastructure machines are created with a plain create, not with
// server-side apply, so no field manager records which fields came from the template:
// the template the machine was cloned from says that instead.

// previousTemplateSpec is the machine spec that the template infra was cloned from
// gives, when that is another template than the one the control plane names now; nil
// when it is the same one, or when infra does not say (adopted from other software:
// the template is not judged then either, see serverplan.InfraTemplateChanged). A template that
// is gone is a reason the server cannot be updated in place (why): the fields it set
// cannot be told from those the provider wrote, and keeping them would leave the
// server unlike one cloned from the new template.
func (r *Reconciler) previousTemplateSpec(ctx context.Context, infra *unstructured.Unstructured, kcp *controlplanev1.KThreesControlPlane) (spec map[string]any, why string, err error) {
	name, hasName := infra.GetAnnotations()[clusterv1.TemplateClonedFromNameAnnotation]
	groupKind, hasGroupKind := infra.GetAnnotations()[clusterv1.TemplateClonedFromGroupKindAnnotation]
	if !hasName || !hasGroupKind || serverplan.InfraTemplateChanged(infra, kcp) == "" {
		return nil, "", nil
	}
	gk := schema.ParseGroupKind(groupKind)
	ref := clusterv1.ContractVersionedObjectReference{APIGroup: gk.Group, Kind: gk.Kind, Name: name}
	template, err := external.GetObjectFromContractVersionedRef(ctx, r.Client, ref, infra.GetNamespace())
	if apierrors.IsNotFound(err) {
		return nil, "the infrastructure template " + groupKind + "/" + name + " it was cloned from is gone, so the fields it set cannot be removed", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading infrastructure template %s %s: %w", groupKind, name, err)
	}
	spec, _, err = unstructured.NestedMap(template.Object, "spec", "template", "spec")
	if err != nil {
		return nil, "", fmt.Errorf("reading infrastructure template %s %s: %w", groupKind, name, err)
	}
	return spec, "", nil
}

// normalizedInfra is infra as the API server would store it: a dry-run update, with
// the resourceVersion infra was read at, through the provider's schema defaults and
// admission webhooks. A machine whose template leaves out what the provider fills in
// would otherwise differ from its desired state for ever, and no extension could
// cover that. The API server refusing it (invalid, forbidden) is a reason the server
// cannot be updated in place (why): the trigger's write would be refused as well.
// Other errors (a conflict, a timeout) are returned, and the pass is retried.
func (r *Reconciler) normalizedInfra(ctx context.Context, infra *unstructured.Unstructured, what string) (normalized *unstructured.Unstructured, why string, err error) {
	normalized = infra.DeepCopy()
	if err := r.Client.Update(ctx, normalized, client.DryRunAll); err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			return nil, "the API server refuses the " + what + " infrastructure machine: " + err.Error(), nil
		}
		return nil, "", fmt.Errorf("normalizing the %s infrastructure machine %s (dry run): %w", what, infra.GetName(), err)
	}
	return normalized, "", nil
}
