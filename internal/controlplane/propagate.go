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
// (and the Machines' deletion timeouts and minReadySeconds), without a rollout, and
// sets each Machine's UpToDate condition. Only what differs is patched, so an idle
// control plane writes nothing.
// It returns each server's bootstrap config and infrastructure machine as read, for
// the up-to-date decision.
func (r *Reconciler) propagate(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, machines collections.Machines) (map[string]serverObjects, error) {
	return r.propagateWith(ctx, cluster, kcp, machines, renewalView{})
}

// propagateWith is propagate with what the pass knows of certificate renewal: a
// server the rollout replaces for its certificates gets UpToDate False with the
// reason, as KCP marks one.
func (r *Reconciler) propagateWith(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, machines collections.Machines, renewal renewalView) (map[string]serverObjects, error) {
	wantLabels, wantAnnotations := desiredLabels(kcp, cluster), desiredAnnotations(kcp)
	objects := make(map[string]serverObjects, machines.Len())
	for _, m := range machines {
		var objs serverObjects
		var err error
		if objs.config, err = r.serverConfig(ctx, m); err != nil {
			return nil, err
		}
		if objs.infra, err = r.serverInfra(ctx, m); err != nil {
			return nil, err
		}
		objects[m.Name] = objs
		if err := r.syncMachine(ctx, kcp, m, objs, renewal, wantLabels, wantAnnotations); err != nil {
			return nil, err
		}
		if !m.DeletionTimestamp.IsZero() {
			continue
		}
		if objs.config != nil {
			before := objs.config.DeepCopy()
			mergeMetadata(objs.config, wantLabels, wantAnnotations)
			if err := r.patchIfChanged(ctx, before, objs.config); err != nil {
				return nil, err
			}
		}
		if objs.infra != nil {
			before := objs.infra.DeepCopy()
			mergeMetadata(objs.infra, wantLabels, wantAnnotations)
			if err := r.patchIfChanged(ctx, before, objs.infra); err != nil {
				return nil, err
			}
		}
	}
	return objects, nil
}

// serverConfig is the server's KThreesConfig, or nil when it has none (adopted
// machines may use another bootstrap provider's config) or it is gone.
func (r *Reconciler) serverConfig(ctx context.Context, m *clusterv1.Machine) (*bootstrapv1.KThreesConfig, error) {
	ref := m.Spec.Bootstrap.ConfigRef
	if ref.Kind != "KThreesConfig" || ref.APIGroup != bootstrapv1.GroupVersion.Group {
		return nil, nil
	}
	config := &bootstrapv1.KThreesConfig{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: ref.Name}, config); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading KThreesConfig of %s: %w", m.Name, err)
	}
	return config, nil
}

// serverInfra is the server's infrastructure machine, or nil when it is gone.
func (r *Reconciler) serverInfra(ctx context.Context, m *clusterv1.Machine) (*unstructured.Unstructured, error) {
	infra, err := external.GetObjectFromContractVersionedRef(ctx, r.Client, m.Spec.InfrastructureRef, m.Namespace)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading infrastructure machine of %s: %w", m.Name, err)
	}
	return infra, nil
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
