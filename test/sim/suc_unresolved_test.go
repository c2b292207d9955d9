package sim

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestSUCRefusesPlanWithoutVersionOrChannel(t *testing.T) {
	t.Parallel()
	plan := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"concurrency": int64(1), "upgrade": map[string]any{"image": "rancher/k3s-upgrade"},
		"nodeSelector": map[string]any{},
	}}}
	plan.SetGroupVersionKind(planResource.GroupVersion().WithKind("Plan"))
	plan.SetNamespace("system-upgrade")
	plan.SetName("no-version")
	c := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithObjects(plan).WithStatusSubresource(plan).Build()
	s := &sucStandIn{c: c, log: func(string, ...any) {}}
	again, err := s.reconcile(context.Background(), client.ObjectKeyFromObject(plan))
	if err != nil || again != 0 {
		t.Fatalf("reconcile = %v, %v; want no retry and no error", again, err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(plan.GroupVersionKind())
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(plan), got); err != nil {
		t.Fatal(err)
	}
	conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
	var resolved map[string]any
	for _, c := range conds {
		if m := c.(map[string]any); m["type"] == "LatestResolved" {
			resolved = m
		}
	}
	if resolved["status"] != "False" || resolved["reason"] != "Error" || resolved["message"] != "cannot resolve plan: missing channel and version" {
		t.Errorf("LatestResolved = %v, want False/Error with SUC's message", resolved)
	}
	if v, ok, _ := unstructured.NestedString(got.Object, "status", "latestVersion"); ok {
		t.Errorf("latestVersion = %q, want none", v)
	}
}
