package controlplane

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/inplace"
)

// selectedBySUC lists the Nodes a Plan runs on, as the system-upgrade-controller picks
// them: its spec.nodeSelector, and a host name label present (rancher/system-upgrade-
// controller pkg/upgrade/plan/plan.go, NodeSelector).
func selectedBySUC(t *testing.T, plan *unstructured.Unstructured) []string {
	t.Helper()
	raw, _, _ := unstructured.NestedMap(plan.Object, "spec", "nodeSelector")
	ls := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, ls); err != nil {
		t.Fatal(err)
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		t.Fatal(err)
	}
	hostname, err := labels.NewRequirement(corev1.LabelHostname, selection.Exists, nil)
	if err != nil {
		t.Fatal(err)
	}
	nodes := &corev1.NodeList{}
	if err := env.Client.List(context.Background(), nodes, client.MatchingLabelsSelector{Selector: sel.Add(*hostname)}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range nodes.Items {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out
}

// A restart Plan runs a privileged Job on the Nodes it selects. A kubelet may set its
// own Node's host name label, so another node taking the target's host name must not
// be selected; and the Node's reported kubelet version, which its kubelet writes, must
// not pick the image. The label that selects the target goes once the restart ended.
func TestRestartPlanSelectsOnlyTheNodeCapk3sLabelled(t *testing.T) {
	f := newRenewalFixture(t, 1, coversVersion())
	ns := f.kcp.Namespace
	var name string
	for n, m := range f.servers(t) {
		name = n
		expireIn(t, m, 10*24*time.Hour)
	}
	target := f.nodes[name]
	// The target's kubelet reports a version of its choosing.
	target.Status.NodeInfo.KubeletVersion = "v1.99.9+k3s1"
	impostor := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: ns + "-impostor", Labels: map[string]string{corev1.LabelHostname: target.Labels[corev1.LabelHostname]},
	}}
	createNode(t, impostor)

	f.renewalPass(t)
	plan := restartPlans(t, ns)[name]
	if plan == nil {
		t.Fatalf("no restart Plan for %s", name)
	}
	if got := selectedBySUC(t, plan); !slices.Equal(got, []string{target.Name}) {
		t.Errorf("the restart Plan selects Nodes %v, want %s alone: a kubelet set %s's host name on %s", got, target.Name, target.Name, impostor.Name)
	}
	if got, _, _ := unstructured.NestedString(plan.Object, "spec", "version"); got != getMachine(t, ns, name).Spec.Version {
		t.Errorf("restart Plan version = %q, want the Machine's %q, not the Node's report", got, getMachine(t, ns, name).Spec.Version)
	}

	completeRestart(t, plan, target)
	f.renewalPass(t)
	live := &corev1.Node{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(target), live); err != nil {
		t.Fatal(err)
	}
	if v, ok := live.Labels[inplace.RestartTargetLabel]; ok || len(restartPlans(t, ns)) != 0 {
		t.Errorf("after the restart: label %s=%q, %d Plans; want neither", inplace.RestartTargetLabel, v, len(restartPlans(t, ns)))
	}
}
