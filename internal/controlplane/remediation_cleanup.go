package controlplane

import (
	"context"
	"errors"
	"fmt"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"
	v1beta1conditions "sigs.k8s.io/cluster-api/util/conditions/deprecated/v1beta1"
	"sigs.k8s.io/cluster-api/util/patch"
	ctrl "sigs.k8s.io/controller-runtime"
)

// A MachineHealthCheck that marks a server unhealthy sets OwnerRemediated=False for
// this controller to act on, and leaves that condition to the owner from then on. A
// server that recovers before it is remediated (remediation was refused, say, as it
// would lose quorum) gets HealthCheckSucceeded=True back but keeps
// OwnerRemediated=False, "waiting for remediation", on a healthy Machine. As
// KubeadmControlPlane does, the owner drops it; the v1beta1 copy too, which the health
// check still writes.

// recoveredBeforeRemediation says which of the Machine's OwnerRemediated conditions
// (v1beta2, deprecated v1beta1) still wait for a remediation its health check no
// longer asks for. A Machine being deleted is left alone: its remediation, if any,
// is under way.
func recoveredBeforeRemediation(m *clusterv1.Machine) (current, v1beta1 bool) {
	if !m.DeletionTimestamp.IsZero() {
		return false, false
	}
	current = conditions.IsTrue(m, clusterv1.MachineHealthCheckSucceededCondition) &&
		conditions.IsFalse(m, clusterv1.MachineOwnerRemediatedCondition)
	v1beta1 = v1beta1conditions.IsTrue(m, clusterv1.MachineHealthCheckSucceededV1Beta1Condition) &&
		v1beta1conditions.IsFalse(m, clusterv1.MachineOwnerRemediatedV1Beta1Condition)
	return current, v1beta1
}

// clearRecoveredRemediations drops the stale OwnerRemediated conditions of recovered
// servers; a Machine that cannot be patched does not stop the others.
func (r *Reconciler) clearRecoveredRemediations(ctx context.Context, machines collections.Machines) error {
	var errs []error
	for _, m := range machines {
		current, v1beta1 := recoveredBeforeRemediation(m)
		if !current && !v1beta1 {
			continue
		}
		helper, err := patch.NewHelper(m, r.Client)
		if err != nil {
			errs = append(errs, fmt.Errorf("patching Machine %s: %w", m.Name, err))
			continue
		}
		if current {
			conditions.Delete(m, clusterv1.MachineOwnerRemediatedCondition)
		}
		if v1beta1 {
			v1beta1conditions.Delete(m, clusterv1.MachineOwnerRemediatedV1Beta1Condition)
		}
		if err := helper.Patch(ctx, m,
			patch.WithOwnedConditions{Conditions: []string{clusterv1.MachineOwnerRemediatedCondition}},
			//nolint:staticcheck // the health check still writes the v1beta1 copy, so it is cleared too
			patch.WithOwnedV1Beta1Conditions{Conditions: []clusterv1.ConditionType{clusterv1.MachineOwnerRemediatedV1Beta1Condition}},
		); err != nil {
			errs = append(errs, fmt.Errorf("clearing OwnerRemediated of recovered Machine %s: %w", m.Name, err))
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Cleared the remediation request of a server that recovered", "Machine", m.Name)
	}
	return errors.Join(errs...)
}
