package sim

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// sucRig is the stand-in on a fake workload API with one Node whose k3s (version
// v1.36.3+k3s1) the simulator started, its certificates issued `age` ago.
func sucRig(t *testing.T, role string, age time.Duration, upgrade map[string]any, version string) (*sucStandIn, client.Client, *unstructured.Unstructured, *workloadCluster) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	plan := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"concurrency": int64(1), "version": version, "cordon": true, "upgrade": upgrade,
		"nodeSelector": map[string]any{},
	}}}
	plan.SetGroupVersionKind(planResource.GroupVersion().WithKind("Plan"))
	plan.SetNamespace("system-upgrade")
	plan.SetName("p")
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(plan).WithStatusSubresource(plan, &corev1.Node{}).Build()
	wc := &workloadCluster{key: client.ObjectKey{Namespace: "ns", Name: "c"}}
	n := node{name: "n-0", providerID: "sim://ns/n-0", role: role, version: "v1.36.3+k3s1"}
	if err := n.register(context.Background(), c, wc); err != nil {
		t.Fatal(err)
	}
	wc.issuedAt("n-0", role == roleServer, "x", time.Now().Add(-age), time.Now())
	return &sucStandIn{c: c, wc: wc, log: func(string, ...any) {}}, c, plan, wc
}

// runPlan takes the Plan through the stand-in until it has nothing more to do now.
func runPlan(t *testing.T, s *sucStandIn, plan *unstructured.Unstructured) {
	t.Helper()
	for range 10 {
		again, err := s.reconcile(context.Background(), client.ObjectKeyFromObject(plan))
		if err != nil {
			t.Fatal(err)
		}
		if again == 0 || again > upgradeDelay {
			return
		}
		time.Sleep(again)
	}
}

func planCondition(t *testing.T, c client.Client, plan *unstructured.Unstructured, typ string) map[string]any {
	t.Helper()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(plan.GroupVersionKind())
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(plan), got); err != nil {
		t.Fatal(err)
	}
	conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
	for _, c := range conds {
		if m := c.(map[string]any); m["type"] == typ {
			return m
		}
	}
	return nil
}

func restartCommand(unit string) map[string]any {
	return map[string]any{"image": "rancher/k3s-upgrade", "command": []any{"chroot", "/host", "systemctl", "restart", unit}}
}

func TestSUCRestartPlanRenewsCertificatesInTheWindow(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		role, unit string
	}{{roleServer, "k3s"}, {roleAgent, "k3s-agent"}} {
		t.Run(tt.role, func(t *testing.T) {
			t.Parallel()
			s, c, plan, wc := sucRig(t, tt.role, 300*24*time.Hour, restartCommand(tt.unit), "v1.36.3+k3s1")
			before := k3smodel.Soonest(wc.leavesOf("n-0"))
			runPlan(t, s, plan)
			after := k3smodel.Soonest(wc.leavesOf("n-0"))
			if !after.After(before.Add(290 * 24 * time.Hour)) {
				t.Errorf("soonest expiry %s -> %s; want renewed to a year from now", before, after)
			}
			if cond := planCondition(t, c, plan, "Complete"); cond["status"] != "True" {
				t.Errorf("Complete = %v, want True", cond)
			}
			n := &corev1.Node{}
			if err := c.Get(context.Background(), client.ObjectKey{Name: "n-0"}, n); err != nil {
				t.Fatal(err)
			}
			if n.Spec.Unschedulable || n.Status.NodeInfo.KubeletVersion != "v1.36.3+k3s1" {
				t.Errorf("Node unschedulable %v, version %s; want uncordoned on the same version", n.Spec.Unschedulable, n.Status.NodeInfo.KubeletVersion)
			}
		})
	}
}

func TestSUCServerRestartKeepsCertificatesOutsideTheWindow(t *testing.T) {
	t.Parallel()
	s, _, plan, wc := sucRig(t, roleServer, 200*24*time.Hour, restartCommand("k3s"), "v1.36.3+k3s1")
	before := wc.leavesOf("n-0")
	runPlan(t, s, plan)
	for i, l := range wc.leavesOf("n-0") {
		if renewed := !l.NotAfter.Equal(before[i].NotAfter); renewed != l.FromServer {
			t.Errorf("%s renewed %v; want only the agent's certificates renewed 165 days before expiry", l.Path, renewed)
		}
	}
}

func TestSUCSameVersionUpgradeRestartsNothing(t *testing.T) {
	t.Parallel()
	s, c, plan, wc := sucRig(t, roleServer, 300*24*time.Hour, map[string]any{"image": "rancher/k3s-upgrade"}, "v1.36.3+k3s1")
	before := k3smodel.Soonest(wc.leavesOf("n-0"))
	runPlan(t, s, plan)
	if after := k3smodel.Soonest(wc.leavesOf("n-0")); !after.Equal(before) {
		t.Errorf("a same-version upgrade renewed certificates: %s -> %s", before, after)
	}
	if cond := planCondition(t, c, plan, "Complete"); cond["status"] != "True" {
		t.Errorf("Complete = %v, want True: upgrade.sh exits 0", cond)
	}
}

func TestSUCNewVersionUpgradeRestarts(t *testing.T) {
	t.Parallel()
	s, _, plan, wc := sucRig(t, roleAgent, 300*24*time.Hour, map[string]any{"image": "rancher/k3s-upgrade"}, "v1.36.4+k3s1")
	before := k3smodel.Soonest(wc.leavesOf("n-0"))
	runPlan(t, s, plan)
	if after := k3smodel.Soonest(wc.leavesOf("n-0")); !after.After(before) {
		t.Errorf("an upgrade left the certificates: %s -> %s", before, after)
	}
}

func TestSUCRestartOfAnotherUnitFails(t *testing.T) {
	t.Parallel()
	s, c, plan, wc := sucRig(t, roleServer, 300*24*time.Hour, restartCommand("k3s-agent"), "v1.36.3+k3s1")
	before := k3smodel.Soonest(wc.leavesOf("n-0"))
	runPlan(t, s, plan)
	cond := planCondition(t, c, plan, "Complete")
	if cond["status"] != "False" || cond["reason"] != "JobFailed" || cond["message"] != "Failed to restart k3s-agent.service: Unit k3s-agent.service not found." {
		t.Errorf("Complete = %v, want JobFailed with systemctl's message", cond)
	}
	if after := k3smodel.Soonest(wc.leavesOf("n-0")); !after.Equal(before) {
		t.Error("a failed Job renewed certificates")
	}
}

func TestSUCJobWaitsOnANodeWithAnExpiredKubeletCertificate(t *testing.T) {
	t.Parallel()
	s, c, plan, wc := sucRig(t, roleAgent, 400*24*time.Hour, restartCommand("k3s-agent"), "v1.36.3+k3s1")
	again, err := s.reconcile(context.Background(), client.ObjectKeyFromObject(plan))
	if err != nil || again != upgradeDelay {
		t.Fatalf("reconcile = %s, %v; want to wait %s", again, err, upgradeDelay)
	}
	n := &corev1.Node{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "n-0"}, n); err != nil {
		t.Fatal(err)
	}
	if n.Spec.Unschedulable || !wc.kubeletExpired("n-0", time.Now()) {
		t.Errorf("unschedulable %v, expired %v: the Job never started, nothing changed", n.Spec.Unschedulable, wc.kubeletExpired("n-0", time.Now()))
	}
}
