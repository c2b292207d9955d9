package bootstrap

import (
	"context"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// Each format's fragment, and a file from a ConfigMap, are admitted and stored as
// written.
func TestAcceptsAdditionalUserData(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	for name, spec := range map[string]bootstrapv1.KThreesConfigSpec{
		"cloud-config": {
			Files: []bootstrapv1.File{{Path: "/etc/app.ini", ContentFrom: &bootstrapv1.FileSource{
				ConfigMap: bootstrapv1.ConfigMapFileSource{Name: "app", Key: "app.ini"}}}},
			AdditionalUserData: bootstrapv1.AdditionalUserData{CloudConfig: "timezone: Europe/Berlin\nlocale: C.UTF-8\n"},
		},
		"ignition": {
			Format: bootstrapv1.Ignition,
			AdditionalUserData: bootstrapv1.AdditionalUserData{
				Ignition: `{"ignition":{"version":"3.3.0"},"storage":{"files":[{"path":"/etc/extra.conf","contents":{"source":"data:,x"}}]}}`},
		},
	} {
		c := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: *spec.DeepCopy()}
		if err := env.Client.Create(ctx, c); err != nil {
			t.Errorf("%s: creating a valid config: %v", name, err)
			continue
		}
		got := &bootstrapv1.KThreesConfig{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), got); err != nil {
			t.Fatal(err)
		}
		if !apiequality.Semantic.DeepEqual(got.Spec.AdditionalUserData, spec.AdditionalUserData) ||
			!apiequality.Semantic.DeepEqual(got.Spec.Files, spec.Files) {
			t.Errorf("%s: stored spec differs:\n got %+v\nwant %+v", name, got.Spec, spec)
		}
	}
}
