package inplace

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

func machineNamed(name string) *clusterv1.Machine {
	return &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: clusterv1.MachineSpec{ClusterName: "c1"}}
}

func TestDesiredPlan(t *testing.T) {
	t.Parallel()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "host-1"}}}
	srv := machineNamed("cp-0")
	srv.Labels = map[string]string{clusterv1.MachineControlPlaneLabel: ""}
	agent := machineNamed("md-0")
	o := PlanOptions{Namespace: "system-upgrade", ServiceAccount: "sa", Image: "img"}

	p := desiredPlan(srv, "v1.32.1+k3s1", o)
	if p.GetNamespace() != "system-upgrade" || p.GetName() != "capk3s-cp-0" || p.GetAnnotations()[MachineAnnotation] != "ns/cp-0" {
		t.Errorf("Plan %s/%s annotations %v", p.GetNamespace(), p.GetName(), p.GetAnnotations())
	}
	for path, want := range map[string]any{"version": "v1.32.1+k3s1", "concurrency": int64(1), "cordon": true, "serviceAccountName": "sa"} {
		if got, _, _ := unstructured.NestedFieldNoCopy(p.Object, "spec", path); got != want {
			t.Errorf("server Plan spec.%s = %v, want %v", path, got, want)
		}
	}
	// Only the Node capk3s labelled is selected; its host name, which its kubelet
	// may set, selects nothing.
	if !selects(t, p, map[string]string{corev1.LabelHostname: "host-1", UpgradeTargetLabel: "capk3s-cp-0"}) {
		t.Errorf("the Plan does not select the Node labelled %s=capk3s-cp-0: %v", UpgradeTargetLabel, p.Object["spec"])
	}
	for _, labels := range []map[string]string{
		node.Labels,
		{corev1.LabelHostname: "host-1", UpgradeTargetLabel: "capk3s-cp-1"},
		{corev1.LabelHostname: "host-1", RestartTargetLabel: "capk3s-cp-0"},
	} {
		if selects(t, p, labels) {
			t.Errorf("the Plan selects a Node labelled %v", labels)
		}
	}
	if _, ok := p.Object["spec"].(map[string]any)["drain"]; ok {
		t.Errorf("a server's Plan drains it")
	}
	a := desiredPlan(agent, "v1.32.1+k3s1", o)
	if force, _, _ := unstructured.NestedBool(a.Object, "spec", "drain", "force"); !force {
		t.Errorf("an agent's Plan does not drain it: %v", a.Object["spec"])
	}
}

// selects says whether the Plan's nodeSelector selects a Node with these labels, as
// SUC reads it (metav1.LabelSelectorAsSelector over spec.nodeSelector).
func selects(t *testing.T, p *unstructured.Unstructured, labels map[string]string) bool {
	t.Helper()
	raw, _, _ := unstructured.NestedMap(p.Object, "spec", "nodeSelector")
	ls := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, ls); err != nil {
		t.Fatal(err)
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		t.Fatal(err)
	}
	return sel.Matches(k8slabels.Set(labels))
}

func TestPlanFailure(t *testing.T) {
	t.Parallel()
	withConds := func(conds ...any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": conds}}}
	}
	cond := func(t, s, reason, msg string) any {
		return map[string]any{"type": t, "status": s, "reason": reason, "message": msg}
	}
	tests := []struct {
		name string
		p    *unstructured.Unstructured
		want string
	}{
		{"no status", withConds(), ""},
		{"applying", withConds(cond("Complete", "False", "", "")), ""},
		{"complete", withConds(cond("Complete", "True", "Complete", "")), ""},
		{"job failed", withConds(cond("Complete", "False", "JobFailed", "Job was active longer than specified deadline")),
			"Complete JobFailed: Job was active longer than specified deadline"},
		{"invalid", withConds(cond("Validated", "False", "Error", "spec.upgrade.image is required")),
			"Validated Error: spec.upgrade.image is required"},
		// SUC makes no Job for a Plan with neither version nor channel, and says so only here.
		{"unresolvable", withConds(cond("LatestResolved", "False", "Error", "cannot resolve plan: missing channel and version")),
			"LatestResolved Error: cannot resolve plan: missing channel and version"},
		{"resolving", withConds(cond("LatestResolved", "Unknown", "", "")), ""},
	}
	for _, tc := range tests {
		if got := planFailure(tc.p); got != tc.want {
			t.Errorf("%s: planFailure = %q, want %q", tc.name, got, tc.want)
		}
	}
}
