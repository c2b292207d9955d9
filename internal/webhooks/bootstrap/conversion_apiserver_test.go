package bootstrap

import (
	"context"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// These tests go through the apiserver's conversion webhook: the harness points the
// CRDs' conversion at this package's webhook server, where SetupWebhooks registered
// the converters.

// oldConfigSpec is a KThreesConfigSpec as cluster-api-k3s's v1beta1 wrote it.
func oldConfigSpec() bootstrapv1beta1.KThreesConfigSpec {
	return bootstrapv1beta1.KThreesConfigSpec{
		Files: []bootstrapv1beta1.File{
			{Path: "/etc/motd", Content: "hello", Owner: "root:root", Permissions: "0644"},
			{Path: "/etc/secret", ContentFrom: &bootstrapv1beta1.FileSource{
				Secret: bootstrapv1beta1.SecretFileSource{Name: "files", Key: "secret"}}},
		},
		PreK3sCommands:  []string{"echo before"},
		PostK3sCommands: []string{"echo after"},
		AgentConfig: bootstrapv1beta1.KThreesAgentConfig{
			NodeLabels: []string{"tier=edge"}, NodeName: "node-a", KubeletArgs: []string{"max-pods=50"}, AirGapped: true,
		},
		ServerConfig: bootstrapv1beta1.KThreesServerConfig{
			KubeAPIServerArgs: []string{"audit-log-maxage=7"}, TLSSan: []string{"cp.example.test"},
			ClusterCidr: "10.42.0.0/16", ServiceCidr: "10.43.0.0/16", DisableComponents: []string{"traefik"},
			DisableExternalCloudProvider: true,
		},
		Version: "v1.31.4+k3s1",
	}
}

// TestV1Beta1ConfigThroughAPIServer: a v1beta1 KThreesConfig created through the
// apiserver (converted up, then admitted by the v1beta2 webhooks) is stored with its
// fields in their v1beta2 places; read at v1beta1 it is what was written; after a
// spec and a status change made at v1beta2, a v1beta1 read shows both and keeps the
// rest.
func TestV1Beta1ConfigThroughAPIServer(t *testing.T) {
	startWebhooks(t)
	requireWebhookConversion(t, "kthreesconfigs.bootstrap.cluster.x-k8s.io")
	ctx := context.Background()
	ns := env.NewNamespace(t)
	written := &bootstrapv1beta1.KThreesConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old"},
		Spec:       oldConfigSpec(),
	}
	if err := env.Client.Create(ctx, written.DeepCopy()); err != nil {
		t.Fatalf("creating a v1beta1 config: %v", err)
	}
	key := client.ObjectKeyFromObject(written)

	hub := &bootstrapv1.KThreesConfig{}
	if err := env.Client.Get(ctx, key, hub); err != nil {
		t.Fatalf("reading at v1beta2: %v", err)
	}
	checkHubSpec(t, hub.Spec)

	old := &bootstrapv1beta1.KThreesConfig{}
	if err := env.Client.Get(ctx, key, old); err != nil {
		t.Fatalf("reading at v1beta1: %v", err)
	}
	if !apiequality.Semantic.DeepEqual(old.Spec, written.Spec) {
		t.Errorf("read back at v1beta1, the spec differs from the one written:\n got %+v\nwant %+v", old.Spec, written.Spec)
	}

	// Edits through v1beta2: a spec field v1beta1 has, one it does not, and the status
	// as the bootstrap controller writes it.
	hub.Spec.PostK3sCommands = append(hub.Spec.PostK3sCommands, "echo done")
	hub.Spec.Format = bootstrapv1.Ignition
	if err := env.Client.Update(ctx, hub); err != nil {
		t.Fatalf("updating at v1beta2: %v", err)
	}
	hub.Status.DataSecretName = "old-bootstrap"
	hub.Status.Initialization.DataSecretCreated = ptr.To(true)
	if err := env.Client.Status().Update(ctx, hub); err != nil {
		t.Fatalf("updating the status at v1beta2: %v", err)
	}

	edited := &bootstrapv1beta1.KThreesConfig{}
	if err := env.Client.Get(ctx, key, edited); err != nil {
		t.Fatalf("reading the edited config at v1beta1: %v", err)
	}
	want := oldConfigSpec()
	want.PostK3sCommands = []string{"echo after", "echo done"}
	if !apiequality.Semantic.DeepEqual(edited.Spec, want) {
		t.Errorf("v1beta1 spec after the v1beta2 edit:\n got %+v\nwant %+v", edited.Spec, want)
	}
	if !edited.Status.Ready || ptr.Deref(edited.Status.DataSecretName, "") != "old-bootstrap" {
		t.Errorf("v1beta1 status: ready %v, dataSecretName %v; want true, old-bootstrap",
			edited.Status.Ready, ptr.Deref(edited.Status.DataSecretName, "<nil>"))
	}

	// The v1beta2-only field survived the trip through v1beta1.
	again := &bootstrapv1.KThreesConfig{}
	if err := env.Client.Get(ctx, key, again); err != nil {
		t.Fatal(err)
	}
	if again.Spec.Format != bootstrapv1.Ignition {
		t.Errorf("spec.format = %q after a v1beta1 read, want %q", again.Spec.Format, bootstrapv1.Ignition)
	}
}

// TestV1Beta1ConfigTemplateThroughAPIServer: the same for a KThreesConfigTemplate,
// whose spec is immutable, so only created and read both ways.
func TestV1Beta1ConfigTemplateThroughAPIServer(t *testing.T) {
	startWebhooks(t)
	requireWebhookConversion(t, "kthreesconfigtemplates.bootstrap.cluster.x-k8s.io")
	ctx := context.Background()
	ns := env.NewNamespace(t)
	written := &bootstrapv1beta1.KThreesConfigTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workers"},
		Spec: bootstrapv1beta1.KThreesConfigTemplateSpec{Template: bootstrapv1beta1.KThreesConfigTemplateResource{
			Spec: oldConfigSpec(),
		}},
	}
	if err := env.Client.Create(ctx, written.DeepCopy()); err != nil {
		t.Fatalf("creating a v1beta1 config template: %v", err)
	}
	key := client.ObjectKeyFromObject(written)
	hub := &bootstrapv1.KThreesConfigTemplate{}
	if err := env.Client.Get(ctx, key, hub); err != nil {
		t.Fatalf("reading at v1beta2: %v", err)
	}
	checkHubSpec(t, hub.Spec.Template.Spec)

	list := &bootstrapv1beta1.KThreesConfigTemplateList{}
	if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing at v1beta1: %v", err)
	}
	if len(list.Items) != 1 || !apiequality.Semantic.DeepEqual(list.Items[0].Spec, written.Spec) {
		t.Errorf("listed at v1beta1: %+v\nwant one template with spec %+v", list.Items, written.Spec)
	}
}

// checkHubSpec requires oldConfigSpec's values in their v1beta2 fields.
func checkHubSpec(t *testing.T, s bootstrapv1.KThreesConfigSpec) {
	t.Helper()
	want := bootstrapv1.KThreesConfigSpec{
		Files: []bootstrapv1.File{
			{Path: "/etc/motd", Content: "hello", Owner: "root:root", Permissions: "0644"},
			{Path: "/etc/secret", ContentFrom: &bootstrapv1.FileSource{
				Secret: bootstrapv1.SecretFileSource{Name: "files", Key: "secret"}}},
		},
		PreK3sCommands:  []string{"echo before"},
		PostK3sCommands: []string{"echo after"},
		AgentConfig: bootstrapv1.KThreesAgentConfig{
			NodeLabels: []string{"tier=edge"}, NodeName: "node-a", KubeletArgs: []string{"max-pods=50"}, AirGapped: true,
		},
		ServerConfig: bootstrapv1.KThreesServerConfig{
			KubeAPIServerArgs: []string{"audit-log-maxage=7"}, TLSSan: []string{"cp.example.test"},
			ClusterCidr: "10.42.0.0/16", ServiceCidr: "10.43.0.0/16", DisableComponents: []string{"traefik"},
			DeprecatedDisableExternalCloudProvider: true,
		},
		Version: "v1.31.4+k3s1",
	}
	if !apiequality.Semantic.DeepEqual(s, want) {
		t.Errorf("v1beta2 spec:\n got %+v\nwant %+v", s, want)
	}
}

// requireWebhookConversion fails unless the CRD converts through a webhook: with the
// apiserver's own "None" conversion, which only relabels apiVersion, many of these
// fields would survive a trip unchanged and prove nothing.
func requireWebhookConversion(t *testing.T, crdName string) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: crdName}, crd); err != nil {
		t.Fatal(err)
	}
	if c := crd.Spec.Conversion; c == nil || c.Strategy != apiextensionsv1.WebhookConverter {
		t.Fatalf("CRD %s does not convert through a webhook: %+v", crdName, c)
	}
}
