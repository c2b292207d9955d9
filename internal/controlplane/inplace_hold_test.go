package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/inplaceplan"
	"github.com/capk3s/capk3s/internal/controlplane/serverplan"

	"github.com/capk3s/capk3s/test/cpfixtures"
)

// A server that breaks during its in-place update (the upgrade image cannot be
// pulled from a private registry, the new k3s does not start) is remediated like
// any other: remediation comes before the wait for the update, as in KCP. Its
// replacement is created at the new version.
func TestInPlaceUpdateDoesNotHoldRemediation(t *testing.T) {
	ctx := context.Background()
	f := newInPlaceFixture(t, 3, 0, coversVersion())
	f.upgrade(t)
	f.pass(t)
	marked := f.marked(t)
	if len(marked) != 1 {
		t.Fatalf("%v marked, want one server", marked)
	}
	broken := f.servers(t)[marked[0]]
	cpfixtures.MarkUnhealthy(broken)
	if err := env.Client.Status().Update(ctx, broken); err != nil {
		t.Fatal(err)
	}
	f.pass(t, broken.Name)
	if m, ok := f.servers(t)[broken.Name]; ok && m.DeletionTimestamp.IsZero() {
		t.Fatalf("the unhealthy server %s updating in place was not remediated", broken.Name)
	}
	if c := conditions.Get(f.kcp, remediatingCondition); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, broken.Name) {
		t.Errorf("Remediating = %+v, want True naming %s", c, broken.Name)
	}
	f.pass(t)
	servers := f.servers(t)
	var replacement *clusterv1.Machine
	for _, m := range servers {
		if _, ok := m.Annotations[serverplan.RemediationForAnnotation]; ok {
			replacement = m
		}
	}
	if len(servers) != 3 || replacement == nil || replacement.Spec.Version != upgradeVersion {
		t.Errorf("servers %v, replacement %v; want 3 with a replacement at %s", keysOf(servers), replacement, upgradeVersion)
	}
}

// setUpdating writes the Updating condition CAPI's Machine controller keeps on a
// Machine marked for an in-place update, as changed at since.
func setUpdating(t *testing.T, name string, f *inPlaceFixture, reason, message string, since time.Time) {
	t.Helper()
	m := f.servers(t)[name]
	conditions.Set(m, metav1.Condition{Type: clusterv1.MachineUpdatingCondition, Status: metav1.ConditionTrue, Reason: reason, Message: message})
	for i := range m.Status.Conditions {
		if m.Status.Conditions[i].Type == clusterv1.MachineUpdatingCondition {
			m.Status.Conditions[i].LastTransitionTime = metav1.NewTime(since)
		}
	}
	if err := env.Client.Status().Update(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

// CAPI's Machine controller with its own InPlaceUpdates gate off leaves a marked
// server as it is: its Updating condition says "In-place update in progress" and
// nothing more, for ever. For a while the control plane waits (and asks to be woken
// when the while is over); then it reports the server, names the gate, and stops
// holding scaling for it. The rollout still waits for that server (no second update
// starts) and the server is never removed for it, not even by a scale-down.
func TestInPlaceReportsAnUpdateCAPINeverStarts(t *testing.T) {
	f := newInPlaceFixture(t, 3, 0, coversVersion())
	f.upgrade(t)
	f.pass(t)
	marked := f.marked(t)
	if len(marked) != 1 {
		t.Fatalf("%v marked, want one server", marked)
	}
	stuck := marked[0]
	f.kcp.Spec.Replicas = ptr.To[int32](5)

	setUpdating(t, stuck, f, clusterv1.MachineInPlaceUpdatingReason, "In-place update in progress", time.Now().Add(-time.Minute))
	result, err := f.try(t)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.servers(t)); n != 3 {
		t.Errorf("%d servers a minute after the mark, want 3: the update holds the scale-up for a while", n)
	}
	if wait := inplaceplan.StartTimeout - time.Minute; result.RequeueAfter <= wait-10*time.Second || result.RequeueAfter > wait {
		t.Errorf("RequeueAfter = %s, want about %s: when the wait for CAPI ends", result.RequeueAfter, wait)
	}
	requireRollingOut(t, f.kcp, controlplanev1.InPlaceUpdatingReason, "Updating in place: "+stuck)

	setUpdating(t, stuck, f, clusterv1.MachineInPlaceUpdatingReason, "In-place update in progress", time.Now().Add(-inplaceplan.StartTimeout-time.Minute))
	f.pass(t)
	if n := len(f.servers(t)); n != 4 {
		t.Errorf("%d servers once CAPI is late, want 4: scaling goes on", n)
	}
	requireRollingOut(t, f.kcp, controlplanev1.InPlaceUpdateNotStartedReason, "Machine "+stuck)
	requireRollingOut(t, f.kcp, controlplanev1.InPlaceUpdateNotStartedReason, "InPlaceUpdates")
	f.pass(t)
	f.pass(t)
	if n, again := len(f.servers(t)), f.marked(t); n != 5 || strings.Join(again, ",") != stuck || f.rc.callCount() != 1 {
		t.Errorf("%d servers, %v marked, %d questions; want 5, only %s, one", n, again, f.rc.callCount(), stuck)
	}

	f.kcp.Spec.Replicas = ptr.To[int32](3)
	for range 3 {
		f.pass(t)
	}
	servers := f.servers(t)
	if _, kept := servers[stuck]; len(servers) != 3 || !kept {
		t.Errorf("servers %v after scaling down to 3, want 3 with %s kept", keysOf(servers), stuck)
	}
}

// Once CAPI's Machine controller works on the update (its Updating message carries
// the extension's word, or says the hook failed), the control plane waits for it
// however long it takes, as KCP does.
func TestInPlaceWaitsForAnUpdateCAPIWorksOn(t *testing.T) {
	for _, tc := range []struct{ reason, message string }{
		{clusterv1.MachineInPlaceUpdatingReason, "In-place update in progress: waiting for the Node to run v1.32.1+k3s1"},
		{clusterv1.MachineInPlaceUpdateFailedReason, "UpdateMachine hook failed: please check controller logs for errors"},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			f := newInPlaceFixture(t, 3, 0, coversVersion())
			f.upgrade(t)
			f.pass(t)
			marked := f.marked(t)
			f.kcp.Spec.Replicas = ptr.To[int32](5)
			setUpdating(t, marked[0], f, tc.reason, tc.message, time.Now().Add(-time.Hour))
			result, err := f.try(t)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(f.servers(t)); n != 3 || result.RequeueAfter != 0 {
				t.Errorf("%d servers, RequeueAfter %s; want 3 and no timer: the update holds scaling", n, result.RequeueAfter)
			}
			requireRollingOut(t, f.kcp, controlplanev1.InPlaceUpdatingReason, "Updating in place: "+marked[0])
		})
	}
}

// A scale-down never picks a server that is being updated in place, even the oldest
// outdated one.
func TestScaleDownNeverPicksAServerUpdatingInPlace(t *testing.T) {
	old := func(name string, age time.Duration) *clusterv1.Machine {
		return &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Now().Add(-age))}}
	}
	updating := old("a", 3*time.Hour)
	updating.Annotations = map[string]string{clusterv1.UpdateInProgressAnnotation: "", runtimev1.PendingHooksAnnotation: "UpdateMachine"}
	machines := collections.FromMachines(updating, old("b", 2*time.Hour), old("c", time.Hour))
	outdated := collections.FromMachines(updating, machines["b"])
	victim := serverplan.SelectMachineForScaleDown(context.Background(), &clusterv1.Cluster{}, machines, outdated, updatingInPlace)
	if victim == nil || victim.Name != "b" {
		t.Errorf("scale-down picked %v, want b: a is updating in place", victim)
	}
	only := serverplan.SelectMachineForScaleDown(context.Background(), &clusterv1.Cluster{}, collections.FromMachines(updating), collections.FromMachines(updating), updatingInPlace)
	if only != nil {
		t.Errorf("scale-down picked %s, the only server, which is updating in place", only.Name)
	}
}
