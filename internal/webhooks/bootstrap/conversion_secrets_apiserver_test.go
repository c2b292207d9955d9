package bootstrap

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// secretSpec has credentials where users put them: an inline file, a boot command,
// a k3s option (vpn-auth's join key), the user's own cloud-config; and a file from a
// ConfigMap, which v1beta1 cannot show either.
func secretSpec() bootstrapv1.KThreesConfigSpec {
	return bootstrapv1.KThreesConfigSpec{
		Version: "v1.31.4+k3s1",
		Files: []bootstrapv1.File{{Path: "/etc/app/db.env", Content: "password=hunter2"},
			{Path: "/etc/app/app.ini", ContentFrom: &bootstrapv1.FileSource{ConfigMap: bootstrapv1.ConfigMapFileSource{Name: "app", Key: "app.ini"}}}},
		BootCommands:       []string{"echo boot-secret"},
		AdditionalUserData: bootstrapv1.AdditionalUserData{CloudConfig: "ca_certs:\n  trusted: [fragment-secret]\n"},
		AgentConfig: bootstrapv1.KThreesAgentConfig{ExtraConfig: map[string]apiextensionsv1.JSON{
			"vpn-auth": {Raw: []byte(`"name=tailscale,joinKey=tskey-auth-SECRET"`)},
		}},
	}
}

func noSecretInAnnotations(t *testing.T, what string, obj metav1.Object) {
	t.Helper()
	for key, value := range obj.GetAnnotations() {
		for _, s := range []string{"hunter2", "boot-secret", "tskey-auth-SECRET", "fragment-secret"} {
			if strings.Contains(value, s) {
				t.Errorf("%s: annotation %s holds %q: %s", what, key, s, value)
			}
		}
	}
}

// A KThreesConfig and a KThreesConfigTemplate show no credential in an annotation at
// v1beta1, and a metadata write through v1beta1 leaves the fields v1beta1 does not
// show (extraConfig, bootCommands, additionalUserData, a ConfigMap file source) as
// stored.
func TestV1Beta1WriteKeepsWithheldConfigFields(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)

	cfg := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}, Spec: secretSpec()}
	if err := env.Client.Create(ctx, cfg); err != nil {
		t.Fatalf("creating a config: %v", err)
	}
	old := &bootstrapv1beta1.KThreesConfig{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cfg), old); err != nil {
		t.Fatal(err)
	}
	noSecretInAnnotations(t, "config at v1beta1", old)
	old.Labels = map[string]string{"edited": "v1beta1"}
	if err := env.Client.Update(ctx, old); err != nil {
		t.Fatalf("updating the config at v1beta1: %v", err)
	}
	stored := &bootstrapv1.KThreesConfig{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cfg), stored); err != nil {
		t.Fatal(err)
	}
	noSecretInAnnotations(t, "stored config", stored)
	if !apiequality.Semantic.DeepEqual(stored.Spec, cfg.Spec) || stored.Labels["edited"] != "v1beta1" {
		t.Errorf("config after a v1beta1 write: labels %v, spec\n got %+v\nwant %+v", stored.Labels, stored.Spec, cfg.Spec)
	}

	tmpl := &bootstrapv1.KThreesConfigTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t"},
		Spec: bootstrapv1.KThreesConfigTemplateSpec{Template: bootstrapv1.KThreesConfigTemplateResource{Spec: secretSpec()}}}
	if err := env.Client.Create(ctx, tmpl); err != nil {
		t.Fatalf("creating a config template: %v", err)
	}
	oldTmpl := &bootstrapv1beta1.KThreesConfigTemplate{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(tmpl), oldTmpl); err != nil {
		t.Fatal(err)
	}
	noSecretInAnnotations(t, "template at v1beta1", oldTmpl)
	oldTmpl.Labels = map[string]string{"edited": "v1beta1"}
	if err := env.Client.Update(ctx, oldTmpl); err != nil {
		t.Fatalf("updating the template at v1beta1: %v", err)
	}
	storedTmpl := &bootstrapv1.KThreesConfigTemplate{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(tmpl), storedTmpl); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(storedTmpl.Spec, tmpl.Spec) || storedTmpl.Labels["edited"] != "v1beta1" {
		t.Errorf("template after a v1beta1 write: labels %v, spec\n got %+v\nwant %+v", storedTmpl.Labels, storedTmpl.Spec, tmpl.Spec)
	}
}
