package controlplane

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/external"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// propagate brings the metadata of existing servers in line with the machine template
// (and the Machines' deletion timeouts), without a rollout. Only what differs is
// patched, so an idle control plane writes nothing.
func (r *Reconciler) propagate(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, machines collections.Machines) error {
	wantLabels, wantAnnotations := desiredLabels(kcp, cluster), desiredAnnotations(kcp)
	for _, m := range machines {
		if !m.DeletionTimestamp.IsZero() {
			continue
		}
		before := m.DeepCopy()
		mergeMetadata(m, wantLabels, wantAnnotations)
		m.Spec.Deletion = desiredDeletion(kcp)
		if err := r.patchIfChanged(ctx, before, m); err != nil {
			return err
		}
		if err := r.propagateToConfig(ctx, m, wantLabels, wantAnnotations); err != nil {
			return err
		}
		if err := r.propagateToInfra(ctx, m, wantLabels, wantAnnotations); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) propagateToConfig(ctx context.Context, m *clusterv1.Machine, labels, annotations map[string]string) error {
	ref := m.Spec.Bootstrap.ConfigRef
	if ref.Kind != "KThreesConfig" || ref.APIGroup != bootstrapv1.GroupVersion.Group {
		return nil
	}
	config := &bootstrapv1.KThreesConfig{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: ref.Name}, config); err != nil {
		return client.IgnoreNotFound(err)
	}
	before := config.DeepCopy()
	mergeMetadata(config, labels, annotations)
	return r.patchIfChanged(ctx, before, config)
}

func (r *Reconciler) propagateToInfra(ctx context.Context, m *clusterv1.Machine, labels, annotations map[string]string) error {
	infra, err := external.GetObjectFromContractVersionedRef(ctx, r.Client, m.Spec.InfrastructureRef, m.Namespace)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading infrastructure machine of %s: %w", m.Name, err)
	}
	before := infra.DeepCopy()
	mergeMetadata(infra, labels, annotations)
	return r.patchIfChanged(ctx, before, infra)
}

// mergeMetadata adds or updates the wanted labels and annotations, leaving others
// (set by users or other controllers) alone.
func mergeMetadata(obj client.Object, labels, annotations map[string]string) {
	l := obj.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, labels)
	obj.SetLabels(l)
	if len(annotations) > 0 {
		a := obj.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		maps.Copy(a, annotations)
		obj.SetAnnotations(a)
	}
}

func (r *Reconciler) patchIfChanged(ctx context.Context, before, after client.Object) error {
	if u, ok := after.(*unstructured.Unstructured); ok {
		if equality.Semantic.DeepEqual(before.(*unstructured.Unstructured).Object, u.Object) {
			return nil
		}
	} else if equality.Semantic.DeepEqual(before, after) {
		return nil
	}
	if err := r.Client.Patch(ctx, after, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("updating %s in place: %w", after.GetName(), err)
	}
	return nil
}
