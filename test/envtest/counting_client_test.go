package envtest_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/test/envtest"
)

func TestCountingClientCountsEachVerb(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	c, err := env.NewCountingClient()
	if err != nil {
		t.Fatal(err)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "counted"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Data = map[string]string{"k": "v"}
	if err := c.Patch(ctx, cm, patch); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}

	want := map[string]int{
		envtest.VerbCreate: 1, envtest.VerbGet: 1, envtest.VerbList: 1,
		envtest.VerbPatch: 1, envtest.VerbDelete: 1,
	}
	for verb, n := range want {
		if got := c.Count(verb); got != n {
			t.Errorf("Count(%s) = %d, want %d", verb, got, n)
		}
	}
	if got := c.Writes(); got != 3 {
		t.Errorf("Writes() = %d, want 3 (create, patch, delete)", got)
	}
	c.Reset()
	if got := c.Writes() + c.Count(envtest.VerbGet); got != 0 {
		t.Errorf("after Reset counts = %v, want none", c.Counts())
	}
}
