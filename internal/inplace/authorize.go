package inplace

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/runtimehooks"
)

// updateMachineHook is the hook's name as CAPI writes it into the pending-hooks
// annotation.
var updateMachineHook = runtimecatalog.HookName(runtimehooksv1.UpdateMachine)

// updateTarget is what an UpdateMachine call may act on, taken from the objects as
// stored, never from the request: the request's body is only the caller's word.
type updateTarget struct {
	machine *clusterv1.Machine
	cluster client.ObjectKey
	// version is the k3s version the Machine's owner decided on (normalized).
	version string
}

// authorizeUpdate finds what an UpdateMachine request may act on. The extension acts
// only on a decision its callers cannot forge: the stored Machine carries CAPI's
// update-in-progress annotation and the pending UpdateMachine hook, which only the
// Machine's owner (the control plane, or CAPI's MachineSet controller) writes, and the
// version comes from the stored Machine and its KThreesConfig. A request that names
// another version than the stored one is refused: the caller's view is not the
// owner's decision. The version-skew rule is checked later, against the Node.
func (e *Extension) authorizeUpdate(ctx context.Context, req *runtimehooksv1.UpdateMachineRequest, requested string) (updateTarget, error) {
	key := client.ObjectKeyFromObject(&req.Desired.Machine)
	stored := &clusterv1.Machine{}
	if err := e.Client.Get(ctx, key, stored); err != nil {
		if apierrors.IsNotFound(err) {
			return updateTarget{}, fmt.Errorf("%w: Machine %s does not exist", errUpdateFailed, key)
		}
		return updateTarget{}, fmt.Errorf("reading Machine %s: %w", key, err)
	}
	if !stored.DeletionTimestamp.IsZero() {
		return updateTarget{}, fmt.Errorf("%w: Machine %s is being deleted", errUpdateFailed, key)
	}
	if _, marked := stored.Annotations[clusterv1.UpdateInProgressAnnotation]; !marked || !runtimehooks.IsPending(runtimehooksv1.UpdateMachine, stored) {
		return updateTarget{}, fmt.Errorf("%w: Machine %s is not marked for an in-place update (annotation %s and pending hook %s)",
			errUpdateFailed, key, clusterv1.UpdateInProgressAnnotation, updateMachineHook)
	}
	version, err := e.storedVersion(ctx, stored)
	if err != nil {
		return updateTarget{}, err
	}
	if version == "" {
		return updateTarget{}, fmt.Errorf("%w: Machine %s has no version", errUpdateFailed, key)
	}
	if requested != "" && k3s.NormalizeVersion(requested) != version {
		return updateTarget{}, fmt.Errorf("%w: the request asks for version %s, but Machine %s is to run %s",
			errUpdateFailed, requested, key, version)
	}
	return updateTarget{
		machine: stored,
		cluster: client.ObjectKey{Namespace: stored.Namespace, Name: stored.Spec.ClusterName},
		version: version,
	}, nil
}

// storedVersion is the version a stored Machine is to run: its KThreesConfig's when
// that sets one (agents' configs may), else the Machine's own.
func (e *Extension) storedVersion(ctx context.Context, m *clusterv1.Machine) (string, error) {
	ref := m.Spec.Bootstrap.ConfigRef
	if ref.Kind == "KThreesConfig" && ref.APIGroup == bootstrapv1.GroupVersion.Group && ref.Name != "" {
		cfg := &bootstrapv1.KThreesConfig{}
		err := e.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: ref.Name}, cfg)
		switch {
		case err == nil && cfg.Spec.Version != "":
			return k3s.NormalizeVersion(cfg.Spec.Version), nil
		case err != nil && !apierrors.IsNotFound(err):
			return "", fmt.Errorf("reading KThreesConfig %s: %w", ref.Name, err)
		}
	}
	return k3s.NormalizeVersion(m.Spec.Version), nil
}
