package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/renewalplan"
	"github.com/capk3s/capk3s/internal/k3s"
)

// renewingMarks names the Machines marked for a restart under way.
func renewingMarks(t *testing.T, ns string) []string {
	t.Helper()
	var out []string
	for name, m := range listServers(t, ns) {
		if _, ok := m.Annotations[controlplanev1.CertificatesRenewingAnnotation]; ok {
			out = append(out, name)
		}
	}
	return sorted(out)
}

// With the in-place path, servers whose certificates expire within the window get a
// k3s restart through SUC, one at a time; none is replaced, and RollingOut says so.
func TestCertificateRenewalRestartsOneServerAtATime(t *testing.T) {
	f := newRenewalFixture(t, 3, coversVersion())
	ns := f.kcp.Namespace
	expiries := map[string]time.Time{}
	for name, m := range f.servers(t) {
		expiries[name] = expireIn(t, m, 10*24*time.Hour)
	}

	f.renewalPass(t)
	marked := renewingMarks(t, ns)
	plans := restartPlans(t, ns)
	if len(marked) != 1 || len(plans) != 1 || plans[marked[0]] == nil {
		t.Fatalf("marked %v, Plans for %v; want one server marked with its Plan", marked, planNames(plans))
	}
	first := marked[0]
	if got := planCommand(plans[first]); got != "chroot /host systemctl restart k3s" {
		t.Errorf("Plan command = %q", got)
	}
	if got := getMachine(t, ns, first).Annotations[controlplanev1.CertificatesRenewingAnnotation]; got != expiries[first].Format(time.RFC3339) {
		t.Errorf("mark = %q, want the expiry it renews %s", got, expiries[first].Format(time.RFC3339))
	}
	requireRollingOut(t, f.kcp, controlplanev1.CertificatesRenewingReason, "Renewing certificates by a k3s restart: "+first)
	// Renewed in place, the servers stay up to date: nothing replaces them.
	for name, m := range f.servers(t) {
		if !conditions.IsTrue(m, clusterv1.MachineUpToDateCondition) {
			t.Errorf("Machine %s not UpToDate while its certificates are renewed in place", name)
		}
	}
	if n := len(f.servers(t)); n != 3 {
		t.Errorf("%d servers, want the 3 kept: renewal in place replaces none", n)
	}
	if f.lastResult != renewalPoll {
		t.Errorf("requeue after %v, want %v: SUC's progress is not watched", f.lastResult, renewalPoll)
	}

	// While it runs, no second restart starts.
	f.renewalPass(t)
	if marked := renewingMarks(t, ns); len(marked) != 1 || marked[0] != first || len(restartPlans(t, ns)) != 1 {
		t.Fatalf("second pass: marked %v, %d Plans; want %s alone", marked, len(restartPlans(t, ns)), first)
	}

	// SUC completes the restart: the Plan goes, the restart is recorded, the next
	// server's restart starts.
	completeRestart(t, plans[first], f.nodes[first])
	f.renewalPass(t)
	m := getMachine(t, ns, first)
	if _, ok := m.Annotations[controlplanev1.CertificatesRenewingAnnotation]; ok {
		t.Errorf("%s still marked after SUC completed its restart", first)
	}
	if got := m.Annotations[controlplanev1.CertificatesRestartedForAnnotation]; got != expiries[first].Format(time.RFC3339) {
		t.Errorf("restarted-for = %q, want %s", got, expiries[first].Format(time.RFC3339))
	}
	plans = restartPlans(t, ns)
	if _, ok := plans[first]; ok {
		t.Errorf("the completed Plan of %s is left", first)
	}
	marked = renewingMarks(t, ns)
	if len(marked) != 1 || marked[0] == first || len(plans) != 1 {
		t.Fatalf("after the first restart: marked %v, Plans for %v; want the next server alone", marked, planNames(plans))
	}

	// The node reports renewed certificates before SUC's label arrives: that ends the
	// restart too.
	second := marked[0]
	expireIn(t, getMachine(t, ns, second), 365*24*time.Hour)
	f.renewalPass(t)
	if _, ok := restartPlans(t, ns)[second]; ok {
		t.Errorf("the Plan of %s is left after its node reported renewed certificates", second)
	}
	// The first server's report has not moved yet: it is not restarted again for the
	// same expiry.
	for _, name := range renewingMarks(t, ns) {
		if name == first {
			t.Errorf("%s restarted twice for one expiry", first)
		}
	}
}

// A restart waits for the same checks as any step on the servers.
func TestCertificateRenewalWaitsForPreflightAndQuorum(t *testing.T) {
	t.Run("a server's Node not Ready", func(t *testing.T) {
		f := newRenewalFixture(t, 3, coversVersion())
		var names []string
		for name, m := range f.servers(t) {
			expireIn(t, m, 10*24*time.Hour)
			names = append(names, name)
		}
		f.notReady[sorted(names)[2]] = true
		f.renewalPass(t)
		if marked, plans := renewingMarks(t, f.kcp.Namespace), restartPlans(t, f.kcp.Namespace); len(marked)+len(plans) != 0 {
			t.Fatalf("marked %v, Plans for %v while a Node is not Ready", marked, planNames(plans))
		}
		requireRollingOut(t, f.kcp, controlplanev1.CertificatesRenewingReason,
			"the certificate renewal waits: waiting for the node of Machine "+sorted(names)[2]+" to be Ready")
	})
	t.Run("another member removed from etcd", func(t *testing.T) {
		f := newRenewalFixture(t, 3, coversVersion())
		var names []string
		for name, m := range f.servers(t) {
			names = append(names, name)
			if len(names) == 1 {
				continue
			}
			expireIn(t, m, 10*24*time.Hour)
		}
		names = sorted(names)
		// The only healthy other member of whichever server goes first is one: no quorum.
		for _, name := range names {
			if _, due := renewalplan.Due(getMachine(t, f.kcp.Namespace, name), 30, time.Now()); !due {
				f.nodes[name].Annotations = map[string]string{k3s.EtcdRemovedNodeNameAnnotation: f.nodes[name].Name}
			}
		}
		f.renewalPass(t)
		if marked := renewingMarks(t, f.kcp.Namespace); len(marked) != 0 {
			t.Fatalf("marked %v with an etcd member removed", marked)
		}
		requireRollingOut(t, f.kcp, controlplanev1.CertificatesRenewingReason, "fewer than a quorum of 2")
	})
}

// Without the in-place path the server is replaced, as KCP does, and the rollout's
// reason names the expiry; no Plan is made.
func TestCertificateRenewalReplacesWithoutInPlace(t *testing.T) {
	cases := map[string]func(f *renewalFixture){
		"InPlaceUpdates gate off":      func(f *renewalFixture) { f.rc = nil },
		"spec.inPlaceUpdates Never":    func(f *renewalFixture) { f.kcp.Spec.InPlaceUpdates = controlplanev1.InPlaceUpdateNever },
		"no system-upgrade-controller": func(f *renewalFixture) { f.workload = withoutSUC{env.Client} },
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			f := newRenewalFixture(t, 3, coversVersion())
			setup(f)
			for _, m := range f.servers(t) {
				expireIn(t, m, 10*24*time.Hour)
			}
			f.renewalPass(t)
			// As KCP marks them, but one at a time (the replacement limit): the server
			// being replaced is not up to date, with the reason.
			outdated := 0
			for name, m := range f.servers(t) {
				c := conditions.Get(m, clusterv1.MachineUpToDateCondition)
				if _, original := f.nodes[name]; original && c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "certificates expire at") {
					outdated++
				}
			}
			if outdated != 1 {
				t.Errorf("%d servers not UpToDate naming the expiry, want the one being replaced", outdated)
			}
			if n := len(f.servers(t)); n != 4 {
				t.Errorf("%d servers, want a fourth created to replace one (maxSurge 1)", n)
			}
			if plans := restartPlans(t, f.kcp.Namespace); len(plans) != 0 {
				t.Errorf("Plans for %v without the in-place path", planNames(plans))
			}
			requireRollingOut(t, f.kcp, controlplanev1.RollingOutReason, "within rollout.before.certificatesExpiryDays (30 days)")
		})
	}
}

// Agents are restarted the same way (their unit is k3s-agent), one at a time, after
// the servers.
func TestCertificateRenewalRestartsAgentsOneAtATime(t *testing.T) {
	f := newRenewalFixture(t, 1, coversVersion())
	ns := f.kcp.Namespace
	a := f.createAgent(t, "md-a")
	b := f.createAgent(t, "md-b")
	expireIn(t, a, 5*24*time.Hour)
	expireIn(t, b, 8*24*time.Hour)

	f.renewalPass(t)
	plans := restartPlans(t, ns)
	if len(plans) != 1 || plans["md-a"] == nil {
		t.Fatalf("Plans for %v, want md-a's (the soonest expiry) alone", planNames(plans))
	}
	if got := planCommand(plans["md-a"]); got != "chroot /host systemctl restart k3s-agent" {
		t.Errorf("agent Plan command = %q", got)
	}
	if _, ok := getMachine(t, ns, "md-a").Annotations[controlplanev1.CertificatesRenewingAnnotation]; !ok {
		t.Errorf("md-a not marked")
	}
	if c := conditions.Get(f.kcp, controlplanev1.RollingOutCondition); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("RollingOut = %+v: an agent's restart is not the servers' rollout", c)
	}
	f.renewalPass(t)
	if plans := restartPlans(t, ns); len(plans) != 1 {
		t.Fatalf("Plans for %v while md-a restarts, want one", planNames(plans))
	}

	// SUC labels md-a's Node: done; md-b goes next.
	node := &corev1.Node{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: ns + "-md-a"}, node); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(plans["md-a"].Object, "hash-1", "status", "latestHash")
	if err := env.Client.Status().Update(context.Background(), plans["md-a"]); err != nil {
		t.Fatal(err)
	}
	node.Labels["plan.upgrade.cattle.io/"+plans["md-a"].GetName()] = "hash-1"
	if err := env.Client.Update(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	f.renewalPass(t)
	plans = restartPlans(t, ns)
	if len(plans) != 1 || plans["md-b"] == nil {
		t.Fatalf("Plans for %v, want md-b's alone", planNames(plans))
	}
	if got := getMachine(t, ns, "md-a").Annotations[controlplanev1.CertificatesRestartedForAnnotation]; got == "" {
		t.Errorf("md-a's restart is not recorded")
	}
}

// Nothing happens to certificates outside the window, nor without the field.
func TestCertificateRenewalNothingOutsideTheWindow(t *testing.T) {
	f := newRenewalFixture(t, 3, coversVersion())
	agent := f.createAgent(t, "md-a")
	expireIn(t, agent, 60*24*time.Hour)
	for _, m := range f.servers(t) {
		expireIn(t, m, 31*24*time.Hour)
	}
	f.renewalPass(t)
	if plans, marked := restartPlans(t, f.kcp.Namespace), renewingMarks(t, f.kcp.Namespace); len(plans)+len(marked) != 0 {
		t.Errorf("outside the window: Plans for %v, marked %v", planNames(plans), marked)
	}
	if c := conditions.Get(f.kcp, controlplanev1.RollingOutCondition); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("RollingOut = %+v, want False", c)
	}

	// Inside the window but the field unset: nothing either.
	f.kcp.Spec.Rollout.Before = controlplanev1.ControlPlaneRolloutBeforeSpec{}
	for _, m := range f.servers(t) {
		expireIn(t, m, 24*time.Hour)
	}
	f.renewalPass(t)
	if plans, n := restartPlans(t, f.kcp.Namespace), len(f.servers(t)); len(plans) != 0 || n != 4 {
		t.Errorf("field unset: Plans for %v, %d Machines (3 servers and the agent)", planNames(plans), n)
	}
}

func planNames(m map[string]*unstructured.Unstructured) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return sorted(out)
}

// A restart whose node still reports the same expiry an hour later renewed nothing:
// a k3s restart renews every leaf it reports, so the report is not one a restart
// renews (forged, or misread). Nothing more is done for it: no second restart, no
// replacement; CertificateRenewalHeld says so and what the user may do.
func TestCertificateRenewalStopsWhenARestartRenewedNothing(t *testing.T) {
	f := newRenewalFixture(t, 3, coversVersion())
	ctx := context.Background()
	for _, m := range f.servers(t) {
		expiry := expireIn(t, m, 10*24*time.Hour)
		before := m.DeepCopy()
		m.Annotations[controlplanev1.CertificatesRestartedForAnnotation] = expiry.Format(time.RFC3339)
		m.Annotations[controlplanev1.CertificatesRestartedAtAnnotation] = time.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339)
		if err := env.Client.Patch(ctx, m, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
	}
	for _, inPlace := range []bool{true, false} {
		if !inPlace {
			// Nor when the in-place path went away meanwhile.
			f.workload = withoutSUC{env.Client}
		}
		f.renewalPass(t)
		if plans := restartPlans(t, f.kcp.Namespace); len(plans) != 0 {
			t.Errorf("in place %v: restarted again for the same expiry: Plans for %v", inPlace, planNames(plans))
		}
		if n := len(f.servers(t)); n != 3 {
			t.Errorf("in place %v: %d servers, want the 3 kept: a report a restart did not change replaces nothing", inPlace, n)
		}
		c := conditions.Get(f.kcp, controlplanev1.CertificateRenewalHeldCondition)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != controlplanev1.RestartRenewedNothingReason ||
			!strings.Contains(c.Message, "still reports the same expiry") || !strings.Contains(c.Message, controlplanev1.CertificatesRestartedForAnnotation) {
			t.Errorf("in place %v: CertificateRenewalHeld = %+v, want True, naming the servers and the way to retry", inPlace, c)
		}
	}
}
