package bootstrap

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/secretcache"
)

// renderedBefore takes up a Machine's data Secret that this config made in an
// earlier life, and says whether it did. clusterctl move (like a restore from a
// backup) recreates the config without its status, and the Machine already names the
// data it booted from. Rendering again would read every Secret the spec names first,
// and one left in the old management cluster (the user's, shared with something
// there: see movelabel.go) would mark a running machine's data unavailable; the data
// is there, and a machine renders once. So when the Machine names a Secret called
// after the config that the config controls, the status says so and nothing is read.
// One metadata read, only for a config whose status lacks its data while its Machine
// names some: never on a first render, where CAPI has not copied a name yet.
func (r *Reconciler) renderedBefore(ctx context.Context, config *bootstrapv1.KThreesConfig, owner *configOwner) (bool, error) {
	if owner.pool || owner.dataSecretName != config.Name {
		return false, nil
	}
	m := secretcache.SecretMetadata()
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: config.Namespace, Name: config.Name}, m)
	switch {
	case apierrors.IsNotFound(err):
		// The Machine names data that is gone: rendering makes it again.
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading bootstrap data Secret %s: %w", config.Name, err)
	case !metav1.IsControlledBy(m, config):
		// Not ours: createDataSecret says so when it meets it.
		return false, nil
	}
	config.Status.DataSecretName = config.Name
	config.Status.Initialization.DataSecretCreated = ptr.To(true)
	setCondition(config, bootstrapv1.DataSecretAvailableCondition, metav1.ConditionTrue, bootstrapv1.DataSecretAvailableReason, "")
	ctrl.LoggerFrom(ctx).Info("Took up the bootstrap data Secret the Machine names, made by this config before (moved or restored)")
	return true, nil
}
