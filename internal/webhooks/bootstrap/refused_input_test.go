package bootstrap

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/test/webhooktest"
)

// refusedConfigInputs are the bootstrap rows of the refused-input table of
// docs/troubleshooting.md. Each is tried on the real apiserver with the webhooks
// installed, as a dry run, on the valid objects of validSpec named "example".
var refusedConfigInputs = []webhooktest.RefusedInput{
	{Kind: "KThreesConfig", Op: "create", Field: "spec.version", Example: `{"spec":{"version":"1.31.4-"}}`},
	{Kind: "KThreesConfig", Op: "create", Field: "spec.files[0].path", Example: `{"spec":{"files":[{"path":"/etc/../root/x","content":"x"}]}}`},
	{Kind: "KThreesConfig", Op: "create", Field: "spec.files[1].path",
		Example: `{"spec":{"files":[{"path":"/etc/motd","content":"a"},{"path":"/etc/motd","content":"b"}]}}`},
	{Kind: "KThreesConfig", Op: "create", Field: "spec.files[0].content",
		Example: `{"spec":{"files":[{"path":"/etc/motd","encoding":"base64","content":"%%%"}]}}`},
	{Kind: "KThreesConfig", Op: "create", Field: "spec.serverConfig.httpsListenPort", Example: `{"spec":{"serverConfig":{"httpsListenPort":"70000"}}}`},
	{Kind: "KThreesConfig", Op: "create", Field: "spec.serverConfig.clusterCidr", Example: `{"spec":{"serverConfig":{"clusterCidr":"10.42.0.0/33"}}}`},
	{Kind: "KThreesConfig", Op: "create", Field: "spec.serverConfig.advertiseAddress", Example: `{"spec":{"serverConfig":{"advertiseAddress":"server-0"}}}`},
	{Kind: "KThreesConfig", Op: "create", Field: "spec.serverConfig.extraConfig[tls-san]",
		Example: `{"spec":{"serverConfig":{"extraConfig":{"tls-san":["x.example.com"]}}}}`},
	{Kind: "KThreesConfig", Op: "create", Field: "spec.serverConfig.extraConfig[supervisor-port]",
		Example: `{"spec":{"serverConfig":{"extraConfig":{"supervisor-port":9345}}}}`},
	{Kind: "KThreesConfig", Op: "update", Field: "spec.serverConfig.extraConfig[supervisor-port]",
		Example: `{"spec":{"serverConfig":{"extraConfig":{"supervisor-port":9345}}}}`},
	{Kind: "KThreesConfig", Op: "create", Field: "spec.agentConfig.extraConfig[secrets-encryption]",
		Example: `{"spec":{"agentConfig":{"extraConfig":{"secrets-encryption":true}}}}`},
	{Kind: "KThreesConfig", Op: "create", Field: "spec.agentConfig.installScriptURL",
		Example: `{"spec":{"agentConfig":{"installScriptURL":"https://mirror.example.com/install.sh|sh"}}}`},
	{Kind: "KThreesConfig", Op: "create", Field: "spec.agentConfig.airGappedChecksums",
		Example: `{"spec":{"agentConfig":{"airGapped":false,"airGappedChecksums":[{"path":"/usr/local/bin/k3s","sha256":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}]}}}`},
	{Kind: "KThreesConfig", Op: "create", Field: "spec.users[1].name", Example: `{"spec":{"users":[{"name":"ops"},{"name":"ops"}]}}`},
	{Kind: "KThreesConfig", Op: "update", Field: "spec.serverConfig.datastore",
		Example: `{"spec":{"serverConfig":{"datastore":{"endpointSecret":{"name":"db","key":"endpoint"}}}}}`},
	{Kind: "KThreesConfigTemplate", Op: "create", Field: "spec.template.spec.version", Example: `{"spec":{"template":{"spec":{"version":"v1.031.4+k3s1"}}}}`},
	{Kind: "KThreesConfigTemplate", Op: "create", Field: "spec.template.metadata.labels",
		Example: `{"spec":{"template":{"metadata":{"labels":{"not a key":"x"}}}}}`},
	{Kind: "KThreesConfigTemplate", Op: "create", Field: "spec.template.spec.serverConfig.extraConfig[supervisor-port]",
		Example: `{"spec":{"template":{"spec":{"serverConfig":{"extraConfig":{"supervisor-port":9345}}}}}}`},
	{Kind: "KThreesConfigTemplate", Op: "create", Field: "spec.template.metadata.annotations[controlplane.cluster.x-k8s.io/etcd-restore]",
		Example: `{"spec":{"template":{"metadata":{"annotations":{"controlplane.cluster.x-k8s.io/etcd-restore":"restore-1"}}}}}`},
	{Kind: "KThreesConfigTemplate", Op: "update", Field: "spec.template.metadata.annotations[controlplane.cluster.x-k8s.io/etcd-restore]",
		Example: `{"spec":{"template":{"metadata":{"annotations":{"controlplane.cluster.x-k8s.io/etcd-restore":"restore-1"}}}}}`},
	{Kind: "KThreesConfigTemplate", Op: "update", Field: "spec.template.spec", Example: `{"spec":{"template":{"spec":{"postK3sCommands":["echo done"]}}}}`},
}

// TestRefusedInputTable keeps the bootstrap table of refused inputs in
// docs/troubleshooting.md true: each row's input is refused by the apiserver with
// exactly the documented message (run with -update-docs to rewrite the table).
func TestRefusedInputTable(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	config := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "example"}, Spec: validSpec()}
	template := newTemplate(ns, "example")
	for _, obj := range []client.Object{config, template} {
		if err := env.Client.Create(ctx, obj.DeepCopyObject().(client.Object)); err != nil {
			t.Fatalf("creating a valid %T: %v", obj, err)
		}
	}
	rows := make([]webhooktest.RefusedInput, len(refusedConfigInputs))
	for i, r := range refusedConfigInputs {
		var base client.Object = config
		if r.Kind == "KThreesConfigTemplate" {
			base = template
		}
		var err error
		switch r.Op {
		case "create":
			u := &unstructured.Unstructured{Object: webhooktest.MergePatch(t, base, r.Example)}
			u.SetGroupVersionKind(bootstrapv1.GroupVersion.WithKind(r.Kind))
			err = env.Client.Create(ctx, u, client.DryRunAll)
		case "update":
			err = env.Client.Patch(ctx, base.DeepCopyObject().(client.Object), client.RawPatch(types.MergePatchType, []byte(r.Example)), client.DryRunAll)
		default:
			t.Fatalf("unknown operation %q", r.Op)
		}
		if err == nil {
			t.Errorf("%s %s %s was accepted", r.Op, r.Kind, r.Example)
			continue
		}
		r.Message = err.Error()
		rows[i] = r
	}
	webhooktest.CheckRefusedInputTable(t, "bootstrap", rows)
}
