package bootstrap

import (
	"bytes"
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// A Machine boots once, so its data is rendered once. A MachinePool's instances come
// and go for as long as the pool lives, and each new one boots from whatever the data
// Secret holds then: the pool's config is rendered on every pass, and the Secret is
// updated in place when the result differs. Comparing the rendered bytes, rather than
// recording which inputs were rendered, catches every input at once: the pool's
// version, the config's spec, the Secrets it reads, the cluster's CA (which the join
// token pins). Rendering is deterministic, so an unchanged pool writes nothing.
//
// The Secret keeps its name, so the MachinePool's dataSecretName stays right and the
// infrastructure provider sees a content change of the Secret it already watches; the
// token it carries is the cluster's, which the control plane keeps for the cluster's
// whole life, so instances booted from older or newer data all join.

// refusePoolServer reports, and says so, a MachinePool that asks for k3s servers.
func refusePoolServer(config *bootstrapv1.KThreesConfig, owner *configOwner) bool {
	if !owner.server {
		return false
	}
	setCondition(config, bootstrapv1.DataSecretAvailableCondition, metav1.ConditionFalse, bootstrapv1.ServerInMachinePoolReason,
		fmt.Sprintf("MachinePool %s has the %s label in spec.template.metadata.labels: a MachinePool runs k3s agents only; "+
			"servers belong to the KThreesControlPlane", owner.name, clusterv1.MachineControlPlaneLabel))
	return true
}

// storePoolDataSecret creates the pool's data Secret, or updates its content in place
// when the new rendering differs. Only a Secret this config controls is written. The
// Secret is read first (Secrets are read from the API server): after the pool's first
// pass it exists, and a create would be answered AlreadyExists on every pass.
func storePoolDataSecret(ctx context.Context, c client.Client, cluster *clusterv1.Cluster, config *bootstrapv1.KThreesConfig, data map[string][]byte) error {
	existing := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: config.Namespace, Name: config.Name}, existing)
	if apierrors.IsNotFound(err) {
		return createDataSecret(ctx, c, cluster, config, data)
	}
	if err != nil {
		return fmt.Errorf("reading bootstrap data Secret: %w", err)
	}
	if err := refuseForeignDataSecret(existing, config); err != nil {
		return err
	}
	if maps.EqualFunc(existing.Data, data, bytes.Equal) {
		return nil
	}
	before := existing.DeepCopy()
	existing.Data = data
	// Optimistic locking: a concurrent writer makes this pass fail and retry on the
	// newer Secret rather than overwrite it blindly.
	if err := c.Patch(ctx, existing, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating bootstrap data Secret: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("Updated the MachinePool's bootstrap data Secret in place; new instances boot from it",
		"Secret", client.ObjectKeyFromObject(existing))
	return nil
}

// ownedByMachinePool says whether a config belongs to a MachinePool, whose data follows
// the cluster's Secrets (CA, token) for as long as the pool lives.
func ownedByMachinePool(config *bootstrapv1.KThreesConfig) bool {
	for _, ref := range config.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil && gv.Group == clusterv1.GroupVersion.Group && ref.Kind == "MachinePool" {
			return true
		}
	}
	return false
}
