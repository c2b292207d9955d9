package controlplane

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ownTemplateByCluster makes the Cluster an owner of the infrastructure machine
// template the servers are cloned from, as CAPI's MachineSets do for theirs, so that
// deleting the Cluster leaves no template behind. Other owners are kept. It runs where
// a server is created, which reads the template anyway: every template the control
// plane uses gets owned without a read on each pass.
func (r *Reconciler) ownTemplateByCluster(ctx context.Context, cluster *clusterv1.Cluster, template client.Object) error {
	ref := metav1.OwnerReference{
		APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cluster.Name, UID: cluster.UID,
	}
	if util.HasExactOwnerRef(template.GetOwnerReferences(), ref) {
		return nil
	}
	before, ok := template.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copying infrastructure template %s", template.GetName())
	}
	template.SetOwnerReferences(util.EnsureOwnerRef(template.GetOwnerReferences(), ref))
	if err := r.Client.Patch(ctx, template, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("making Cluster %s an owner of infrastructure template %s: %w", cluster.Name, template.GetName(), err)
	}
	return nil
}
