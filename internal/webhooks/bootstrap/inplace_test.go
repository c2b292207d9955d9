package bootstrap

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// An in-place update changes a running machine's KThreesConfig spec (its version):
// the webhook lets it through like any valid spec change.
func TestConfigInPlaceVersionChangeAllowed(t *testing.T) {
	w := &KThreesConfig{}
	ctx := context.Background()
	oldC := &bootstrapv1.KThreesConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-0"},
		Spec:       bootstrapv1.KThreesConfigSpec{Version: "v1.31.4+k3s1"},
	}
	newC := oldC.DeepCopy()
	newC.Annotations = map[string]string{clusterv1.UpdateInProgressAnnotation: ""}
	newC.Spec.Version = "v1.32.1+k3s1"
	if err := w.Default(ctx, newC); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ValidateUpdate(ctx, oldC, newC); err != nil {
		t.Errorf("in-place version change rejected: %v", err)
	}
}
