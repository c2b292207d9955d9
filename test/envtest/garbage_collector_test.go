package envtest_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/test/envtest"
)

// The harness's garbage collector is the real one: a Secret whose only owner (one of
// our custom kinds) is deleted goes away, and one with another live owner stays, with
// the dangling reference removed. Later tests rely on this to prove the join token
// survives rollouts.
func TestGarbageCollectorDeletesOrphansAndKeepsSharedDependents(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	c := env.Client

	doomed := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "doomed"}}
	survivor := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "survivor"}}
	for _, owner := range []client.Object{doomed, survivor} {
		if err := c.Create(ctx, owner); err != nil {
			t.Fatal(err)
		}
	}
	orphan := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "only-owner-deleted"}}
	if err := controllerutil.SetControllerReference(doomed, orphan, c.Scheme()); err != nil {
		t.Fatal(err)
	}
	shared := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "another-owner-left"}}
	if err := controllerutil.SetControllerReference(doomed, shared, c.Scheme()); err != nil {
		t.Fatal(err)
	}
	if err := controllerutil.SetOwnerReference(survivor, shared, c.Scheme()); err != nil {
		t.Fatal(err)
	}
	for _, s := range []client.Object{orphan, shared} {
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}

	if err := c.Delete(ctx, doomed); err != nil {
		t.Fatal(err)
	}

	err := envtest.Eventually(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(orphan), &corev1.Secret{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("the Secret whose only owner was deleted still exists: %v", err)
	}
	// The collector handles both dependents from the same event; once the orphan is
	// gone, the shared Secret has been processed too: its dangling reference is removed.
	err = envtest.Eventually(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		got := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(shared), got); err != nil {
			return false, err
		}
		return len(got.OwnerReferences) == 1, nil
	})
	if err != nil {
		t.Fatalf("the Secret with a second owner was not kept with only that owner: %v", err)
	}
	got := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(shared), got); err != nil {
		t.Fatal(err)
	}
	if ref := got.OwnerReferences[0]; ref.UID != survivor.UID {
		t.Errorf("remaining owner = %s/%s, want the survivor", ref.Kind, ref.Name)
	}
}
