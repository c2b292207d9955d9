package controlplane

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// The first pass of a control plane that is not paused writes Paused=False together
// with the rest of its status: one status write, not a separate early one for Paused
// followed by another pass's.
func TestTheFirstPassWritesNotPausedWithTheRestOfItsStatus(t *testing.T) {
	ns := env.NewNamespace(t)
	_, kcp := newClusterWithControlPlane(t, ns, false)
	var counts writeCounts
	r := &Reconciler{Client: countingWrites(t, &counts), writes: newOwnWrites()}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(kcp)}); err != nil {
		t.Fatal(err)
	}
	if counts.statusPatches != 1 {
		t.Errorf("the first pass sent %d status writes, want 1", counts.statusPatches)
	}
	stored := readControlPlane(t, kcp)
	if c := conditions.Get(stored, clusterv1.PausedCondition); c == nil || c.Status != metav1.ConditionFalse || c.Reason != clusterv1.NotPausedReason {
		t.Errorf("Paused condition after the first pass: %+v, want False/%s", c, clusterv1.NotPausedReason)
	}
	if !conditions.IsTrue(stored, controlplanev1.CertificatesAvailableCondition) || !conditions.IsTrue(stored, controlplanev1.TokenAvailableCondition) {
		t.Errorf("the first pass did not write the rest of its status: conditions %+v", stored.Status.Conditions)
	}
	if !controllerutil.ContainsFinalizer(stored, controlplanev1.KThreesControlPlaneFinalizer) {
		t.Errorf("the first pass did not add the finalizer: %v", stored.Finalizers)
	}
}
