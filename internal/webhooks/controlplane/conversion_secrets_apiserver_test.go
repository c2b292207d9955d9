package controlplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
)

// The credentials the objects below carry in their spec; no annotation may show them.
var specSecrets = []string{"hunter2", "tskey-auth-SECRET", "boot-secret"}

func noSecretInAnnotations(t *testing.T, what string, obj metav1.Object) {
	t.Helper()
	for key, value := range obj.GetAnnotations() {
		for _, s := range specSecrets {
			if strings.Contains(value, s) {
				t.Errorf("%s: annotation %s holds %q: %s", what, key, s, value)
			}
		}
	}
}

// A v1beta1 control plane whose template reference is at an older apiVersion than
// the CRD's newest (as manifests written for cluster-api-k3s are) is stored with that
// reference kept, and nothing else: not its inline file content.
func TestOlderTemplateAPIVersionKeepsNoFileContent(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	written := oldControlPlane(ns, "older")
	written.Spec.InfrastructureTemplate.APIVersion = simv1.GroupVersion.Group + "/v1beta1"
	written.Spec.KThreesConfigSpec.Files = append(written.Spec.KThreesConfigSpec.Files,
		bootstrapv1beta1.File{Path: "/etc/app/db.env", Content: "password=hunter2", Permissions: "0600"})
	if err := env.Client.Create(ctx, written.DeepCopy()); err != nil {
		t.Fatalf("creating a v1beta1 control plane: %v", err)
	}
	key := client.ObjectKeyFromObject(written)
	stored := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, key, stored); err != nil {
		t.Fatal(err)
	}
	noSecretInAnnotations(t, "stored", stored)
	if v := stored.Annotations["k3s.cluster.x-k8s.io/v1beta1-conversion-data"]; !strings.Contains(v, written.Spec.InfrastructureTemplate.APIVersion) {
		t.Errorf("the older apiVersion is not kept: %q", v)
	}
	old := &controlplanev1beta1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, key, old); err != nil {
		t.Fatal(err)
	}
	noSecretInAnnotations(t, "read at v1beta1", old)
	if !apiequality.Semantic.DeepEqual(old.Spec, written.Spec) {
		t.Errorf("read back at v1beta1, the spec differs from the one written:\n got %+v\nwant %+v", old.Spec, written.Spec)
	}
}

// extraConfig and bootCommands are not shown at v1beta1, and a write through v1beta1
// (an update and a patch) leaves them as stored.
func TestV1Beta1WriteKeepsWithheldFields(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cp := newControlPlane(ns)
	cp.Spec.MachineTemplate.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{
		APIGroup: simv1.GroupVersion.Group, Kind: "SimMachineTemplate", Name: "servers",
	}
	cs := &cp.Spec.KThreesConfigSpec
	cs.BootCommands = []string{"echo boot-secret"}
	cs.AgentConfig.ExtraConfig = map[string]apiextensionsv1.JSON{"vpn-auth": {Raw: []byte(`"name=tailscale,joinKey=tskey-auth-SECRET"`)}}
	cs.Files = []bootstrapv1.File{{Path: "/etc/app/db.env", Content: "password=hunter2"}}
	cs.Format = bootstrapv1.Ignition
	if err := env.Client.Create(ctx, cp); err != nil {
		t.Fatalf("creating a v1beta2 control plane: %v", err)
	}
	want := cp.Spec.DeepCopy()
	key := client.ObjectKeyFromObject(cp)

	old := &controlplanev1beta1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, key, old); err != nil {
		t.Fatal(err)
	}
	noSecretInAnnotations(t, "read at v1beta1", old)
	old.Spec.MachineTemplate.ObjectMeta.Labels = map[string]string{"edited": "update"}
	if err := env.Client.Update(ctx, old); err != nil {
		t.Fatalf("updating at v1beta1: %v", err)
	}
	want.MachineTemplate.ObjectMeta.Labels = map[string]string{"edited": "update"}
	checkStoredSpec(t, key, want)

	patched := &controlplanev1beta1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, key, patched); err != nil {
		t.Fatal(err)
	}
	before := patched.DeepCopy()
	patched.Spec.MachineTemplate.ObjectMeta.Labels = map[string]string{"edited": "patch"}
	if err := env.Client.Patch(ctx, patched, client.MergeFrom(before)); err != nil {
		t.Fatalf("patching at v1beta1: %v", err)
	}
	want.MachineTemplate.ObjectMeta.Labels = map[string]string{"edited": "patch"}
	checkStoredSpec(t, key, want)

	// A server-side apply of a v1beta1 manifest that names one field.
	applied := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": controlplanev1beta1.GroupVersion.String(), "kind": "KThreesControlPlane",
		"metadata": map[string]any{"name": key.Name, "namespace": key.Namespace},
		"spec":     map[string]any{"machineTemplate": map[string]any{"metadata": map[string]any{"labels": map[string]any{"edited": "apply"}}}},
	}}
	if err := env.Client.Patch(ctx, applied, client.Apply, client.FieldOwner("v1beta1-manifests"), client.ForceOwnership); err != nil { //nolint:staticcheck // client.Apply is the patch type the v1beta1 manifest tools use
		t.Fatalf("applying at v1beta1: %v", err)
	}
	want.MachineTemplate.ObjectMeta.Labels = map[string]string{"edited": "apply"}
	checkStoredSpec(t, key, want)
}

func checkStoredSpec(t *testing.T, key client.ObjectKey, want *controlplanev1.KThreesControlPlaneSpec) {
	t.Helper()
	stored := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(context.Background(), key, stored); err != nil {
		t.Fatal(err)
	}
	noSecretInAnnotations(t, "stored", stored)
	if !apiequality.Semantic.DeepEqual(stored.Spec, *want) {
		t.Errorf("stored spec after a v1beta1 write:\n got %+v\nwant %+v", stored.Spec, *want)
	}
}

// The whole v1beta1 spec an earlier release kept is rewritten by the defaulting
// webhook on the object's next write: the reference's apiVersion stays, the file
// content goes.
func TestEarlierReleaseConversionDataIsRewrittenOnWrite(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	v1 := oldControlPlane(ns, "earlier")
	v1.Spec.InfrastructureTemplate.APIVersion = simv1.GroupVersion.Group + "/v1beta1"
	v1.Spec.KThreesConfigSpec.Files = []bootstrapv1beta1.File{{Path: "/etc/app/db.env", Content: "password=hunter2"}}
	cp := newControlPlane(ns)
	cp.Name = v1.Name
	cp.Spec.MachineTemplate.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{
		APIGroup: simv1.GroupVersion.Group, Kind: "SimMachineTemplate", Name: "servers",
	}
	cp.Spec.KThreesConfigSpec.Files = []bootstrapv1.File{{Path: "/etc/app/db.env", Content: "password=hunter2"}}
	data, err := json.Marshal(v1.Spec)
	if err != nil {
		t.Fatal(err)
	}
	specJSON, err := json.Marshal(cp.Spec)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(specJSON)
	legacy, err := json.Marshal(map[string]any{"spec": map[string]any{"digest": hex.EncodeToString(sum[:]), "data": json.RawMessage(data)}})
	if err != nil {
		t.Fatal(err)
	}
	cp.Annotations = map[string]string{"k3s.cluster.x-k8s.io/v1beta1-conversion-data": string(legacy)}
	if err := env.Client.Create(ctx, cp); err != nil {
		t.Fatalf("creating a control plane with an earlier release's conversion data: %v", err)
	}
	stored := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cp), stored); err != nil {
		t.Fatal(err)
	}
	noSecretInAnnotations(t, "stored", stored)
	old := &controlplanev1beta1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cp), old); err != nil {
		t.Fatal(err)
	}
	if got := old.Spec.InfrastructureTemplate.APIVersion; got != v1.Spec.InfrastructureTemplate.APIVersion {
		t.Errorf("v1beta1 infrastructureTemplate.apiVersion = %q, want the kept %q", got, v1.Spec.InfrastructureTemplate.APIVersion)
	}
}
