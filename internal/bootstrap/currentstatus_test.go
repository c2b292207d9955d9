package bootstrap

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// A pass from a current copy writes its status without the resourceVersion guard, but never on
// another object than the one it rendered for: a config deleted and made again under
// the same name while the pass ran keeps its own status (the data Secret of the pass
// belongs to the old config and is garbage-collected with it).
func TestARenderedStatusNeverLandsOnAConfigMadeAgainUnderTheSameName(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	old := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent-0"}}
	if err := env.Client.Create(ctx, old); err != nil {
		t.Fatal(err)
	}
	rendered := old.DeepCopy()
	rendered.Status.Initialization.DataSecretCreated = ptr.To(true)
	rendered.Status.DataSecretName = "agent-0"

	if err := env.Client.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	again := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent-0"}}
	if err := env.Client.Create(ctx, again); err != nil {
		t.Fatal(err)
	}

	if err := writeStatusFromCurrentCopy(ctx, env.Client, rendered); err == nil {
		t.Fatal("the status of the deleted config was written on the one made again")
	}
	got := &bootstrapv1.KThreesConfig{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(again), got); err != nil {
		t.Fatal(err)
	}
	if got.UID != again.UID || ptr.Deref(got.Status.Initialization.DataSecretCreated, false) || got.Status.DataSecretName != "" {
		t.Fatalf("the config made again has the old pass's status: %+v", got.Status)
	}
}
