package apitest

import (
	"context"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

func TestCRDsCarryTheContractLabel(t *testing.T) {
	for _, name := range []string{
		"kthreesconfigs.bootstrap.cluster.x-k8s.io",
		"kthreesconfigtemplates.bootstrap.cluster.x-k8s.io",
		"kthreescontrolplanes.controlplane.cluster.x-k8s.io",
		"kthreescontrolplanetemplates.controlplane.cluster.x-k8s.io",
		"kthreesetcdsnapshots.controlplane.cluster.x-k8s.io",
		"kthreesetcdrestores.controlplane.cluster.x-k8s.io",
	} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatalf("CRD %s: %v", name, err)
		}
		if got := crd.Labels[clusterv1.GroupVersion.String()]; got != "v1beta2" {
			t.Errorf("CRD %s: label %s = %q, want v1beta2 (CAPI resolves contract versions with it)",
				name, clusterv1.GroupVersion.String(), got)
		}
	}
}

func TestClusterControlPlaneAndConfigRoundTrip(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)

	cluster := newCluster(ns, "c1")
	if err := env.Client.Create(ctx, cluster); err != nil {
		t.Fatalf("creating Cluster: %v", err)
	}
	kcp := newControlPlane(ns, "c1-control-plane")
	if err := env.Client.Create(ctx, kcp); err != nil {
		t.Fatalf("creating KThreesControlPlane: %v", err)
	}
	config := newConfig(ns, "c1-agent")
	if err := env.Client.Create(ctx, config); err != nil {
		t.Fatalf("creating KThreesConfig: %v", err)
	}

	gotKCP := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(kcp), gotKCP); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(gotKCP.Spec, kcp.Spec) {
		t.Errorf("KThreesControlPlane spec changed on the way through the apiserver:\n got %+v\nwant %+v", gotKCP.Spec, kcp.Spec)
	}
	gotConfig := &bootstrapv1.KThreesConfig{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(config), gotConfig); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(gotConfig.Spec, config.Spec) {
		t.Errorf("KThreesConfig spec changed on the way through the apiserver:\n got %+v\nwant %+v", gotConfig.Spec, config.Spec)
	}

	// Status follows the v1beta2 contract and goes through the status subresource.
	gotConfig.Status.Initialization.DataSecretCreated = ptr.To(true)
	gotConfig.Status.DataSecretName = "c1-agent"
	if err := env.Client.Status().Update(ctx, gotConfig); err != nil {
		t.Fatalf("updating KThreesConfig status: %v", err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(bootstrapv1.GroupVersion.WithKind("KThreesConfig"))
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(config), u); err != nil {
		t.Fatal(err)
	}
	created, _, _ := unstructured.NestedBool(u.Object, "status", "initialization", "dataSecretCreated")
	if !created {
		t.Errorf("status.initialization.dataSecretCreated not stored: %v", u.Object["status"])
	}
}

// Manifests written for cluster-api-k3s put infrastructureRef and the timeouts directly
// under machineTemplate. The schema must keep them (for the defaulting webhook to move),
// not prune them silently.
func TestOldMachineTemplateShapeIsNotPruned(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": controlplanev1.GroupVersion.String(),
		"kind":       "KThreesControlPlane",
		"metadata":   map[string]any{"name": "old", "namespace": ns},
		"spec": map[string]any{
			"version": "v1.30.2+k3s2",
			"machineTemplate": map[string]any{
				"infrastructureRef": map[string]any{
					"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
					"kind":       "DockerMachineTemplate",
					"name":       "old",
				},
				"nodeDrainTimeout": "2m0s",
			},
		},
	}}
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatalf("creating a KThreesControlPlane in the old shape: %v", err)
	}
	got := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "old"}, got); err != nil {
		t.Fatal(err)
	}
	ref := got.Spec.MachineTemplate.DeprecatedInfrastructureRef //nolint:staticcheck // the deprecated field is what is tested
	if ref == nil || ref.Kind != "DockerMachineTemplate" || ref.APIVersion != "infrastructure.cluster.x-k8s.io/v1beta1" {
		t.Errorf("old machineTemplate.infrastructureRef was not kept: %+v", ref)
	}
	d := got.Spec.MachineTemplate.DeprecatedNodeDrainTimeout //nolint:staticcheck // the deprecated field is what is tested
	if d == nil || d.Duration.String() != "2m0s" {
		t.Errorf("old machineTemplate.nodeDrainTimeout was not kept: %v", d)
	}
}

func TestScaleSubresource(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	kcp := newControlPlane(ns, "scaled")
	if err := env.Client.Create(ctx, kcp); err != nil {
		t.Fatal(err)
	}
	kcp.Status.Replicas = ptr.To[int32](1)
	kcp.Status.Selector = clusterv1.MachineControlPlaneNameLabel + "=scaled"
	if err := env.Client.Status().Update(ctx, kcp); err != nil {
		t.Fatalf("updating status: %v", err)
	}

	// What 'kubectl scale --replicas=3' does: read and write the scale subresource.
	scale := &autoscalingv1.Scale{}
	if err := env.Client.SubResource("scale").Get(ctx, kcp, scale); err != nil {
		t.Fatalf("reading scale: %v", err)
	}
	if scale.Spec.Replicas != 1 || scale.Status.Replicas != 1 || scale.Status.Selector != kcp.Status.Selector {
		t.Errorf("scale = spec %d, status %d %q; want spec 1, status 1 %q",
			scale.Spec.Replicas, scale.Status.Replicas, scale.Status.Selector, kcp.Status.Selector)
	}
	scale.Spec.Replicas = 3
	if err := env.Client.SubResource("scale").Update(ctx, kcp, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("writing scale: %v", err)
	}
	got := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(kcp), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Replicas == nil || *got.Spec.Replicas != 3 {
		t.Errorf("spec.replicas after scaling = %v, want 3", got.Spec.Replicas)
	}
}

func TestTemplatesAreAccepted(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	configTemplate := &bootstrapv1.KThreesConfigTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workers"},
		Spec: bootstrapv1.KThreesConfigTemplateSpec{Template: bootstrapv1.KThreesConfigTemplateResource{
			Spec: newConfig(ns, "x").Spec,
		}},
	}
	if err := env.Client.Create(ctx, configTemplate); err != nil {
		t.Fatalf("creating KThreesConfigTemplate: %v", err)
	}
	cpTemplate := &controlplanev1.KThreesControlPlaneTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "servers"},
		Spec: controlplanev1.KThreesControlPlaneTemplateSpec{Template: controlplanev1.KThreesControlPlaneTemplateResource{
			Spec: controlplanev1.KThreesControlPlaneTemplateResourceSpec{
				MachineTemplate: &controlplanev1.KThreesControlPlaneTemplateMachineTemplate{
					Spec: controlplanev1.KThreesControlPlaneTemplateMachineTemplateSpec{
						Deletion: controlplanev1.MachineDeletionSpec{NodeDrainTimeoutSeconds: ptr.To[int32](120)},
					},
				},
				KThreesConfigSpec: newControlPlane(ns, "x").Spec.KThreesConfigSpec,
			},
		}},
	}
	if err := env.Client.Create(ctx, cpTemplate); err != nil {
		t.Fatalf("creating KThreesControlPlaneTemplate: %v", err)
	}
}

// The contract's spec.rollout.after, as a ClusterClass topology writes it, is kept by
// the schema (a strict client would refuse an unknown field; others would lose it).
func TestContractRolloutAfterIsKept(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": controlplanev1.GroupVersion.String(),
		"kind":       "KThreesControlPlane",
		"metadata":   map[string]any{"name": "topology", "namespace": ns},
		"spec": map[string]any{
			"version": "v1.31.4+k3s1",
			"machineTemplate": map[string]any{"spec": map[string]any{"infrastructureRef": map[string]any{
				"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachineTemplate", "name": "t",
			}}},
			"rollout": map[string]any{"after": "2030-03-09T09:00:00Z", "before": map[string]any{"certificatesExpiryDays": int64(30)}},
		},
	}}
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatalf("creating a KThreesControlPlane with spec.rollout.after: %v", err)
	}
	got := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "topology"}, got); err != nil {
		t.Fatal(err)
	}
	if after := got.Spec.Rollout.After.UTC().Format("2006-01-02T15:04:05Z"); after != "2030-03-09T09:00:00Z" {
		t.Errorf("spec.rollout.after = %s, want 2030-03-09T09:00:00Z", after)
	}
	if days := got.Spec.Rollout.Before.CertificatesExpiryDays; days != 30 {
		t.Errorf("spec.rollout.before.certificatesExpiryDays = %d, want 30", days)
	}
}
