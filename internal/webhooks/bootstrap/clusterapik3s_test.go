package bootstrap

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/test/webhooktest"
)

// These tests create a worker template shaped like cluster-api-k3s v0.3's samples,
// with every field of its v1beta2 KThreesConfig spec set
// (testdata/clusterapik3s-workers-configtemplate.yaml), through the real apiserver
// with strict field validation, as kubectl apply sends it: a field the schema lacked
// would fail the request. They check the exact warnings and that every field written
// is stored, and kept by the Go types.

const workersTemplate = "testdata/clusterapik3s-workers-configtemplate.yaml"

func TestClusterAPIK3sConfigTemplateManifestKeepsEveryField(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	c, warnings := webhooktest.StrictClient(t, env.Config, env.Scheme)

	written := webhooktest.LoadManifest(t, workersTemplate, ns)
	if err := c.Create(ctx, written.DeepCopy()); err != nil {
		t.Fatalf("creating the manifest with strict field validation: %v", err)
	}
	webhooktest.CheckWarnings(t, warnings.Take(), []string{
		"spec.template.spec.serverConfig.etcdProxyImage is ignored: capk3s runs no etcd proxy; it never connects to etcd and leaves membership changes to k3s's own etcd controller",
	})
	stored := checkStored(t, written)
	webhooktest.CheckTypedRoundTrip(t, env.Client, stored, &bootstrapv1.KThreesConfigTemplate{})

	// A MachineSet makes each worker's KThreesConfig from spec.template; the config
	// keeps every field too, and warns alike.
	templateSpec, _, err := unstructured.NestedMap(stored.Object, "spec", "template", "spec")
	if err != nil {
		t.Fatal(err)
	}
	config := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": bootstrapv1.GroupVersion.String(),
		"kind":       "KThreesConfig",
		"metadata":   map[string]any{"namespace": ns, "name": "vault-workers-4r8tq"},
		"spec":       templateSpec,
	}}
	if err := c.Create(ctx, config.DeepCopy()); err != nil {
		t.Fatalf("creating a config from the template's spec: %v", err)
	}
	webhooktest.CheckWarnings(t, warnings.Take(), []string{
		"spec.serverConfig.etcdProxyImage is ignored: capk3s runs no etcd proxy; it never connects to etcd and leaves membership changes to k3s's own etcd controller",
	})
	storedConfig := checkStored(t, config)
	webhooktest.CheckTypedRoundTrip(t, env.Client, storedConfig, &bootstrapv1.KThreesConfig{})

	// Spec edits warn again; metadata edits, which controllers make, do not.
	got := &bootstrapv1.KThreesConfig{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(config), got); err != nil {
		t.Fatal(err)
	}
	got.Finalizers = []string{"example.org/hold"}
	if err := c.Update(ctx, got); err != nil {
		t.Fatalf("metadata-only update: %v", err)
	}
	webhooktest.CheckWarnings(t, warnings.Take(), nil)
	got.Spec.PostK3sCommands = append(got.Spec.PostK3sCommands, "echo done")
	if err := c.Update(ctx, got); err != nil {
		t.Fatalf("spec update: %v", err)
	}
	webhooktest.CheckWarnings(t, warnings.Take(), []string{
		"spec.serverConfig.etcdProxyImage is ignored: capk3s runs no etcd proxy; it never connects to etcd and leaves membership changes to k3s's own etcd controller",
	})
}

// TestStrictClientRefusesUnknownFields: the client of these tests really asks for
// strict field validation, so that the manifest being accepted means the schema
// knows every field.
func TestStrictClientRefusesUnknownFields(t *testing.T) {
	startWebhooks(t)
	ns := env.NewNamespace(t)
	c, _ := webhooktest.StrictClient(t, env.Config, env.Scheme)
	obj := webhooktest.LoadManifest(t, workersTemplate, ns)
	if err := unstructured.SetNestedField(obj.Object, "x", "spec", "template", "spec", "agentConfig", "notAField"); err != nil {
		t.Fatal(err)
	}
	err := c.Create(context.Background(), obj)
	if err == nil || !strings.Contains(err.Error(), `strict decoding error: unknown field "spec.template.spec.agentConfig.notAField"`) {
		t.Errorf("unknown field: got %v, want a strict decoding error naming it", err)
	}
}

// checkStored reads written back, raw, and requires its spec to be stored exactly as
// written: nothing of a KThreesConfig(Template) spec is moved or defaulted.
func checkStored(t *testing.T, written *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(written.GroupVersionKind())
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(written), stored); err != nil {
		t.Fatal(err)
	}
	for _, d := range webhooktest.StoredDifferences(webhooktest.SpecLeaves(t, written.Object), webhooktest.SpecLeaves(t, stored.Object), nil, nil) {
		t.Errorf("stored %s differs from the manifest: %s", written.GetKind(), d)
	}
	return stored
}
