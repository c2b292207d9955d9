package controlplane

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1" //nolint:staticcheck // the v1beta1 contract types of the v1beta1 API served for cluster-api-k3s users
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
)

// These tests go through the apiserver's conversion webhook: the harness points the
// CRD's conversion at this package's webhook server, where SetupWebhooks registered
// the converter. The infrastructure kind is the simulator's, whose CRD (with its
// contract label) every test environment installs, so that down-conversion can look
// its apiVersion up.

var simTemplateAPIVersion = simv1.GroupVersion.String()

// oldControlPlane is a KThreesControlPlane as cluster-api-k3s's v1beta1 wrote it.
func oldControlPlane(namespace, name string) *controlplanev1beta1.KThreesControlPlane {
	return &controlplanev1beta1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: controlplanev1beta1.KThreesControlPlaneSpec{
			Replicas: ptr.To[int32](3),
			Version:  "v1.31.4+k3s1",
			InfrastructureTemplate: corev1.ObjectReference{
				APIVersion: simTemplateAPIVersion, Kind: "SimMachineTemplate", Name: "servers",
			},
			KThreesConfigSpec: bootstrapv1beta1.KThreesConfigSpec{
				Files:          []bootstrapv1beta1.File{{Path: "/etc/motd", Content: "hello", Permissions: "0644"}},
				PreK3sCommands: []string{"echo before"},
				ServerConfig: bootstrapv1beta1.KThreesServerConfig{
					ClusterCidr: "10.42.0.0/16", TLSSan: []string{"cp.example.test"}, DisableComponents: []string{"traefik"},
				},
				AgentConfig: bootstrapv1beta1.KThreesAgentConfig{NodeLabels: []string{"tier=control-plane"}},
			},
			UpgradeAfter:     ptr.To(metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))),
			NodeDrainTimeout: &metav1.Duration{Duration: 90 * time.Second},
			MachineTemplate: controlplanev1beta1.KThreesControlPlaneMachineTemplate{
				ObjectMeta: clusterv1beta1.ObjectMeta{Labels: map[string]string{"role": "server"}},
			},
			RemediationStrategy: &controlplanev1beta1.RemediationStrategy{
				MaxRetry: ptr.To[int32](2), RetryPeriod: metav1.Duration{Duration: 5 * time.Minute},
			},
		},
	}
}

// TestV1Beta1ControlPlaneThroughAPIServer: a v1beta1 KThreesControlPlane created
// through the apiserver (so converted up and then admitted by the v1beta2 webhooks)
// is stored with its fields in their v1beta2 places; read back at v1beta1 it is what
// was written; edited at v1beta2 and read at v1beta1 again it shows the edit and keeps
// everything else.
func TestV1Beta1ControlPlaneThroughAPIServer(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "kthreescontrolplanes.controlplane.cluster.x-k8s.io"}, crd); err != nil {
		t.Fatal(err)
	}
	// With the apiserver's own "None" conversion (apiVersion relabelled) this test
	// would fail less clearly: say so first.
	if c := crd.Spec.Conversion; c == nil || c.Strategy != apiextensionsv1.WebhookConverter {
		t.Fatalf("the KThreesControlPlane CRD does not convert through a webhook: %+v", c)
	}
	ns := env.NewNamespace(t)
	written := oldControlPlane(ns, "old")
	if err := env.Client.Create(ctx, written.DeepCopy()); err != nil {
		t.Fatalf("creating a v1beta1 control plane: %v", err)
	}
	key := client.ObjectKeyFromObject(written)

	hub := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, key, hub); err != nil {
		t.Fatalf("reading at v1beta2: %v", err)
	}
	wantRef := clusterv1.ContractVersionedObjectReference{
		APIGroup: simv1.GroupVersion.Group, Kind: "SimMachineTemplate", Name: "servers",
	}
	if got := hub.Spec.MachineTemplate.Spec.InfrastructureRef; got != wantRef {
		t.Errorf("spec.machineTemplate.spec.infrastructureRef = %+v, want %+v (from infrastructureTemplate)", got, wantRef)
	}
	if got := hub.Spec.RolloutAfter; got == nil || !got.Equal(written.Spec.UpgradeAfter) {
		t.Errorf("spec.rolloutAfter = %v, want %v (from upgradeAfter)", got, written.Spec.UpgradeAfter)
	}
	if got := hub.Spec.MachineTemplate.Spec.Deletion.NodeDrainTimeoutSeconds; !ptr.Equal(got, ptr.To[int32](90)) {
		t.Errorf("spec.machineTemplate.spec.deletion.nodeDrainTimeoutSeconds = %v, want 90 (from nodeDrainTimeout 90s)", ptr.Deref(got, -1))
	}
	//nolint:staticcheck // conversion must not fill the deprecated fields, which is what is tested
	if hub.Spec.MachineTemplate.DeprecatedInfrastructureRef != nil || hub.Spec.MachineTemplate.DeprecatedNodeDrainTimeout != nil {
		t.Errorf("v1beta2 spec uses the deprecated machine template fields: %+v", hub.Spec.MachineTemplate)
	}
	if !ptr.Equal(hub.Spec.Replicas, ptr.To[int32](3)) || hub.Spec.Version != "v1.31.4+k3s1" {
		t.Errorf("replicas %v, version %q; want 3, v1.31.4+k3s1", ptr.Deref(hub.Spec.Replicas, -1), hub.Spec.Version)
	}
	cs := hub.Spec.KThreesConfigSpec
	if len(cs.Files) != 1 || cs.Files[0].Path != "/etc/motd" || cs.Files[0].Content != "hello" || cs.Files[0].Permissions != "0644" ||
		cs.ServerConfig.ClusterCidr != "10.42.0.0/16" || !equalSpecs(cs.ServerConfig.TLSSan, []string{"cp.example.test"}) ||
		!equalSpecs(cs.ServerConfig.DisableComponents, []string{"traefik"}) || !equalSpecs(cs.PreK3sCommands, []string{"echo before"}) ||
		!equalSpecs(cs.AgentConfig.NodeLabels, []string{"tier=control-plane"}) {
		t.Errorf("spec.kthreesConfigSpec not carried over: %+v", cs)
	}
	if got := hub.Spec.MachineTemplate.ObjectMeta.Labels; !equalSpecs(got, map[string]string{"role": "server"}) {
		t.Errorf("spec.machineTemplate.metadata.labels = %v", got)
	}
	if rs := hub.Spec.RemediationStrategy; rs == nil || !ptr.Equal(rs.MaxRetry, ptr.To[int32](2)) || rs.RetryPeriod.Duration != 5*time.Minute {
		t.Errorf("spec.remediationStrategy = %+v, want maxRetry 2, retryPeriod 5m", rs)
	}
	// The v1beta2 defaulting webhook ran on the converted object.
	if hub.Spec.RolloutStrategy == nil || hub.Spec.RolloutStrategy.Type != controlplanev1.RollingUpdateStrategyType {
		t.Errorf("spec.rolloutStrategy not defaulted: %+v", hub.Spec.RolloutStrategy)
	}

	old := &controlplanev1beta1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, key, old); err != nil {
		t.Fatalf("reading at v1beta1: %v", err)
	}
	if !apiequality.Semantic.DeepEqual(old.Spec, written.Spec) {
		t.Errorf("read back at v1beta1, the spec differs from the one written:\n got %+v\nwant %+v", old.Spec, written.Spec)
	}

	// An edit through v1beta2: scale, a new template, a longer drain timeout.
	hub.Spec.Replicas = ptr.To[int32](5)
	hub.Spec.MachineTemplate.Spec.InfrastructureRef.Name = "servers-v2"
	hub.Spec.MachineTemplate.Spec.Deletion.NodeDrainTimeoutSeconds = ptr.To[int32](120)
	if err := env.Client.Update(ctx, hub); err != nil {
		t.Fatalf("updating at v1beta2: %v", err)
	}
	edited := &controlplanev1beta1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, key, edited); err != nil {
		t.Fatalf("reading the edited control plane at v1beta1: %v", err)
	}
	if !ptr.Equal(edited.Spec.Replicas, ptr.To[int32](5)) {
		t.Errorf("v1beta1 replicas = %v, want 5", ptr.Deref(edited.Spec.Replicas, -1))
	}
	if got := edited.Spec.NodeDrainTimeout; got == nil || got.Duration != 2*time.Minute {
		t.Errorf("v1beta1 nodeDrainTimeout = %v, want 2m", got)
	}
	if ref := edited.Spec.InfrastructureTemplate; ref.APIVersion != simTemplateAPIVersion || ref.Kind != "SimMachineTemplate" || ref.Name != "servers-v2" {
		t.Errorf("v1beta1 infrastructureTemplate = %+v, want %s SimMachineTemplate servers-v2", ref, simTemplateAPIVersion)
	}
	unchanged := written.Spec.DeepCopy()
	unchanged.Replicas, unchanged.NodeDrainTimeout, unchanged.InfrastructureTemplate =
		edited.Spec.Replicas, edited.Spec.NodeDrainTimeout, edited.Spec.InfrastructureTemplate
	if !apiequality.Semantic.DeepEqual(edited.Spec, *unchanged) {
		t.Errorf("the v1beta2 edit changed other v1beta1 fields:\n got %+v\nwant %+v", edited.Spec, *unchanged)
	}
}

// TestV1Beta2ControlPlaneReadAtV1Beta1: a control plane that never was v1beta1 has no
// kept apiVersion for its template; reading it at v1beta1 looks the version up in
// the template kind's CRD (its contract label), and a v1beta1 list converts every
// item.
func TestV1Beta2ControlPlaneReadAtV1Beta1(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cp := newControlPlane(ns)
	cp.Spec.MachineTemplate.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{
		APIGroup: simv1.GroupVersion.Group, Kind: "SimMachineTemplate", Name: "servers",
	}
	cp.Spec.RolloutAfter = ptr.To(metav1.NewTime(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)))
	if err := env.Client.Create(ctx, cp); err != nil {
		t.Fatalf("creating a v1beta2 control plane: %v", err)
	}
	if err := env.Client.Create(ctx, oldControlPlane(ns, "old")); err != nil {
		t.Fatalf("creating a v1beta1 control plane: %v", err)
	}

	list := &controlplanev1beta1.KThreesControlPlaneList{}
	if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing at v1beta1: %v", err)
	}
	if len(list.Items) != 2 {
		t.Fatalf("listed %d control planes at v1beta1, want 2", len(list.Items))
	}
	for _, item := range list.Items {
		if item.Name != cp.Name {
			continue
		}
		s := item.Spec
		if ref := s.InfrastructureTemplate; ref.APIVersion != simTemplateAPIVersion || ref.Kind != "SimMachineTemplate" || ref.Name != "servers" {
			t.Errorf("infrastructureTemplate = %+v, want %s SimMachineTemplate servers", ref, simTemplateAPIVersion)
		}
		if s.UpgradeAfter == nil || !s.UpgradeAfter.Equal(cp.Spec.RolloutAfter) {
			t.Errorf("upgradeAfter = %v, want %v (from rolloutAfter)", s.UpgradeAfter, cp.Spec.RolloutAfter)
		}
		if s.NodeDrainTimeout == nil || s.NodeDrainTimeout.Duration != time.Minute {
			t.Errorf("nodeDrainTimeout = %v, want 1m (from nodeDrainTimeoutSeconds 60)", s.NodeDrainTimeout)
		}
		if !ptr.Equal(s.Replicas, ptr.To[int32](3)) || s.Version != cp.Spec.Version || s.KThreesConfigSpec.ServerConfig.ClusterCidr != "10.42.0.0/16" {
			t.Errorf("v1beta1 spec = %+v", s)
		}
	}
}
