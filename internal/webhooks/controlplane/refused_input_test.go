package controlplane

import (
	"context"
	"strconv"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/webhooktest"
)

// refusedControlPlaneInputs are the control-plane rows of the refused-input table of
// docs/troubleshooting.md. Each is tried on the real apiserver with the webhooks
// installed, as a dry run, on the valid objects of validSpec and validTemplateSpec
// named "example" (3 servers, maxSurge 1, embedded etcd, v1.31.4+k3s1).
var refusedControlPlaneInputs = []webhooktest.RefusedInput{
	{Kind: "KThreesControlPlane", Op: "create", Field: "spec.replicas", Example: `{"spec":{"replicas":2}}`},
	{Kind: "KThreesControlPlane", Op: "create", Field: "spec.replicas", Example: `{"spec":{"replicas":4}}`},
	{Kind: "KThreesControlPlane", Op: "create", Field: "spec.version", Example: `{"spec":{"version":"v1.031.4+k3s1"}}`},
	{Kind: "KThreesControlPlane", Op: "create", Field: "spec.version", Example: `{"spec":{"version":"v1.31.4+rke2r1"}}`},
	{Kind: "KThreesControlPlane", Op: "create", Field: "spec.rolloutStrategy.rollingUpdate.maxSurge",
		Example: `{"spec":{"replicas":1,"rolloutStrategy":{"rollingUpdate":{"maxSurge":0}}}}`},
	{Kind: "KThreesControlPlane", Op: "create", Field: "spec.remediationStrategy.retryPeriod",
		Example: `{"spec":{"remediationStrategy":{"retryPeriod":"-1m"}}}`},
	{Kind: "KThreesControlPlane", Op: "create", Field: "spec.machineNaming.template",
		Example: `{"spec":{"machineNaming":{"template":"{{ .cluster.name }}-server"}}}`},
	{Kind: "KThreesControlPlane", Op: "create", Field: "spec.machineNaming.template",
		Example: `{"spec":{"machineNaming":{"template":"{{ range 3 }}{{ $.random }}{{ end }}"}}}`},
	{Kind: "KThreesControlPlane", Op: "create", Field: "spec.machineTemplate.spec.taints[0].key",
		Example: `{"spec":{"machineTemplate":{"spec":{"taints":[{"key":"node.kubernetes.io/unschedulable","effect":"NoSchedule","propagation":"Always"}]}}}}`},
	{Kind: "KThreesControlPlane", Op: "create", Field: "spec.kthreesConfigSpec.serverConfig.clusterDNS",
		Example: `{"spec":{"kthreesConfigSpec":{"serverConfig":{"clusterDNS":"10.53.0.10"}}}}`},
	{Kind: "KThreesControlPlane", Op: "create", Field: "spec.kthreesConfigSpec.serverConfig.extraConfig[supervisor-port]",
		Example: `{"spec":{"kthreesConfigSpec":{"serverConfig":{"extraConfig":{"supervisor-port":9345}}}}}`},
	{Kind: "KThreesControlPlane", Op: "create", Field: "spec.machineTemplate.metadata.annotations[controlplane.cluster.x-k8s.io/etcd-restore]",
		Example: `{"spec":{"machineTemplate":{"metadata":{"annotations":{"controlplane.cluster.x-k8s.io/etcd-restore":"restore-1"}}}}}`},
	{Kind: "KThreesControlPlane", Op: "update", Field: "spec.machineTemplate.metadata.annotations[controlplane.cluster.x-k8s.io/etcd-restore]",
		Example: `{"spec":{"machineTemplate":{"metadata":{"annotations":{"controlplane.cluster.x-k8s.io/etcd-restore":"restore-1"}}}}}`},
	{Kind: "KThreesControlPlane", Op: "update", Field: "spec.version", Example: `{"spec":{"version":"v1.33.0+k3s1"}}`},
	{Kind: "KThreesControlPlane", Op: "update", Field: "spec.version", Example: `{"spec":{"version":"v1.30.4+k3s1"}}`},
	{Kind: "KThreesControlPlane", Op: "update", Field: "spec.kthreesConfigSpec.serverConfig.serviceCidr",
		Example: `{"spec":{"kthreesConfigSpec":{"serverConfig":{"serviceCidr":"10.96.0.0/12","clusterDNS":"10.96.0.10"}}}}`},
	{Kind: "KThreesControlPlane", Op: "update", Field: "spec.kthreesConfigSpec.serverConfig.extraConfig[flannel-backend]",
		Example: `{"spec":{"kthreesConfigSpec":{"serverConfig":{"extraConfig":{"flannel-backend":"host-gw"}}}}}`},
	{Kind: "KThreesControlPlane", Op: "update", Field: "spec.kthreesConfigSpec.serverConfig.extraConfig[supervisor-port]",
		Example: `{"spec":{"kthreesConfigSpec":{"serverConfig":{"extraConfig":{"supervisor-port":9345}}}}}`},
	{Kind: "KThreesControlPlane", Op: "update", Field: "spec.kthreesConfigSpec.serverConfig.datastore",
		Example: `{"spec":{"replicas":2,"kthreesConfigSpec":{"serverConfig":{"datastore":{"endpointSecret":{"name":"db","key":"endpoint"}}}}}}`},
	{Kind: "KThreesControlPlane", Op: "update", Field: "spec.caCertificateValidityPeriodDays",
		Example: `{"spec":{"caCertificateValidityPeriodDays":7300}}`},
	{Kind: "KThreesControlPlane (scale)", Op: "scale", Field: "spec.replicas", Example: "2"},
	{Kind: "KThreesControlPlane (scale)", Op: "scale", Field: "spec.replicas", Example: "4"},
	{Kind: "KThreesControlPlaneTemplate", Op: "create", Field: "spec.template.spec.machineNaming.template",
		Example: `{"spec":{"template":{"spec":{"machineNaming":{"template":"Server_{{ .random }}"}}}}}`},
	{Kind: "KThreesControlPlaneTemplate", Op: "create", Field: "spec.template.spec.kthreesConfigSpec.files[0].path",
		Example: `{"spec":{"template":{"spec":{"kthreesConfigSpec":{"files":[{"path":"etc/motd","content":"hello"}]}}}}}`},
	{Kind: "KThreesControlPlaneTemplate", Op: "create", Field: "spec.template.spec.kthreesConfigSpec.serverConfig.extraConfig[supervisor-port]",
		Example: `{"spec":{"template":{"spec":{"kthreesConfigSpec":{"serverConfig":{"extraConfig":{"supervisor-port":9345}}}}}}}`},
	{Kind: "KThreesControlPlaneTemplate", Op: "create", Field: "spec.template.spec.machineTemplate.metadata.annotations[controlplane.cluster.x-k8s.io/etcd-restore]",
		Example: `{"spec":{"template":{"spec":{"machineTemplate":{"metadata":{"annotations":{"controlplane.cluster.x-k8s.io/etcd-restore":"restore-1"}}}}}}}`},
	{Kind: "KThreesControlPlaneTemplate", Op: "update", Field: "spec.template.spec",
		Example: `{"spec":{"template":{"spec":{"kthreesConfigSpec":{"preK3sCommands":["echo hello"]}}}}}`},
}

// TestRefusedInputTable keeps the control-plane table of refused inputs in
// docs/troubleshooting.md true: each row's input is refused by the apiserver with
// exactly the documented message (run with -update-docs to rewrite the table).
func TestRefusedInputTable(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cp := newControlPlane(ns)
	cp.Name = "example"
	template := newTemplate(ns, "example")
	for _, obj := range []client.Object{cp, template} {
		if err := env.Client.Create(ctx, obj.DeepCopyObject().(client.Object)); err != nil {
			t.Fatalf("creating a valid %T: %v", obj, err)
		}
	}
	rows := make([]webhooktest.RefusedInput, len(refusedControlPlaneInputs))
	for i, r := range refusedControlPlaneInputs {
		var base client.Object = cp
		if r.Kind == "KThreesControlPlaneTemplate" {
			base = template
		}
		gvk := controlplanev1.GroupVersion.WithKind(r.Kind)
		var err error
		switch r.Op {
		case "create":
			u := &unstructured.Unstructured{Object: webhooktest.MergePatch(t, base, r.Example)}
			u.SetGroupVersionKind(gvk)
			err = env.Client.Create(ctx, u, client.DryRunAll)
		case "update":
			err = env.Client.Patch(ctx, base.DeepCopyObject().(client.Object), client.RawPatch(types.MergePatchType, []byte(r.Example)), client.DryRunAll)
		case "scale":
			replicas, convErr := strconv.ParseInt(r.Example, 10, 32)
			if convErr != nil {
				t.Fatal(convErr)
			}
			current := &controlplanev1.KThreesControlPlane{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cp), current); err != nil {
				t.Fatal(err)
			}
			err = env.Client.SubResource("scale").Update(ctx, current, client.WithSubResourceBody(
				&autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: int32(replicas)}}), client.DryRunAll)
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
	webhooktest.CheckRefusedInputTable(t, "controlplane", rows)
}
