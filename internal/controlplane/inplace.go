package controlplane

import (
	"context"
	"fmt"

	"k8s.io/component-base/featuregate"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/cluster-api/util/collections"
	ctrl "sigs.k8s.io/controller-runtime"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/runtimehooks"
)

// This file is the control plane's side of CAPI's in-place update protocol: when
// servers are updated in place, and what the rest of the reconciler does meanwhile.
// inplace_canupdate.go asks the extensions, inplace_trigger.go marks a server,
// inplace_hold.go holds the pass back while an update is under way. What they decide
// (the request, what an answer covers, the spec written, the hold) is decided in
// package inplaceplan.

// The Runtime SDK client finds the update extensions in ExtensionConfigs (read only:
// CAPI core's controller discovers them) and honours their namespace selectors.
// +kubebuilder:rbac:groups=runtime.cluster.x-k8s.io,resources=extensionconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// InPlaceUpdatesGate is the control-plane manager's feature gate for in-place updates,
// named as CAPI core's gate for the same protocol.
const InPlaceUpdatesGate featuregate.Feature = "InPlaceUpdates"

// AddFeatureGates registers the control plane's gates on the manager's gate set,
// before its --feature-gates flag is parsed.
func AddFeatureGates(gates featuregate.MutableFeatureGate) error {
	return gates.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		InPlaceUpdatesGate: {Default: false, PreRelease: featuregate.Alpha},
	})
}

// inPlaceAllowed says whether this control plane's servers may be updated in place:
// the manager runs with the gate (which is what gives the reconciler a RuntimeClient)
// and the control plane has not opted out.
func (r *Reconciler) inPlaceAllowed(kcp *controlplanev1.KThreesControlPlane) bool {
	return r.RuntimeClient != nil && kcp.Spec.InPlaceUpdates != controlplanev1.InPlaceUpdateNever
}

// updatingInPlace says a server is in an in-place update, from the moment this
// controller marks it until CAPI's Machine controller has cleared both marks: the
// update-in-progress annotation (set first by this controller, removed first by the
// Machine controller) and the pending UpdateMachine hook (set last, removed last).
// Either one alone is still an update under way.
func updatingInPlace(m *clusterv1.Machine) bool {
	_, marked := m.Annotations[clusterv1.UpdateInProgressAnnotation]
	return marked || updateHookPending(m)
}

// triggerIncomplete is a server this controller marked but whose trigger did not
// finish (a crash, a failed write): it has the annotation and no pending hook yet.
// It is completed, never asked about or updated a second time.
func triggerIncomplete(m *clusterv1.Machine) bool {
	_, marked := m.Annotations[clusterv1.UpdateInProgressAnnotation]
	return marked && !updateHookPending(m)
}

func updateHookPending(m *clusterv1.Machine) bool {
	return runtimehooks.IsPending(runtimehooksv1.UpdateMachine, m)
}

// markUpdateHookPending adds UpdateMachine to the Machine's pending hooks, keeping the
// others.
func markUpdateHookPending(m *clusterv1.Machine) {
	runtimehooks.MarkPending(runtimehooksv1.UpdateMachine, m)
}

// updatingServers names the servers (not being deleted) under an in-place update.
func updatingServers(machines collections.Machines) []string {
	return sorted(machines.Filter(collections.Not(collections.HasDeletionTimestamp), updatingInPlace).Names())
}

// completeInPlaceTriggers completes the triggers this controller left incomplete (a
// crash, a failed write between the trigger's writes): that is the pass's one step
// on the servers, before anything else, so that a marked server always reaches CAPI.
// It reports whether it took the step.
func (r *Reconciler) completeInPlaceTriggers(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, seen *observed) (bool, error) {
	incomplete := seen.machines.Filter(collections.Not(collections.HasDeletionTimestamp), triggerIncomplete)
	for _, m := range incomplete {
		ctrl.LoggerFrom(ctx).Info("Completing the in-place update trigger of a server", "Machine", m.Name)
		want, why, err := r.desiredServerObjects(ctx, cluster, kcp, m, seen.objects[m.Name])
		if err != nil {
			return true, err
		}
		if why != "" {
			// Decided when the server was marked, and undone by a change since (its
			// old template deleted, a template the API server now refuses): the
			// pass waits, retried, until the change is undone or the Machine is
			// deleted.
			return true, fmt.Errorf("completing the in-place update of server %s: %s", m.Name, why)
		}
		if err := r.completeInPlaceTrigger(ctx, m, want, seen.objects[m.Name]); err != nil {
			return true, err
		}
	}
	return incomplete.Len() > 0, nil
}
