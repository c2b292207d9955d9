package conversion

import (
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

func controlPlaneWithExtraConfig() *controlplanev1.KThreesControlPlane {
	return &controlplanev1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Name: "cp", Namespace: "ns", UID: "cp-uid"},
		Spec: controlplanev1.KThreesControlPlaneSpec{
			Version: "v1.31.4+k3s1", KThreesConfigSpec: secretConfigSpecV1Beta2(),
			MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachineTemplate", Name: "cp"},
			}},
		},
	}
}

// A v1beta1 client neither sees nor changes extraConfig and bootCommands: its write
// leaves them as stored, including a change made at v1beta2 since it read the object.
func TestWithheldFieldsStayAsStoredThroughV1Beta1(t *testing.T) {
	lk := Lookups{APIVersion: testAPIVersion}
	stored := useStoredObjects(&lk)
	ctx := t.Context()

	hub := controlPlaneWithExtraConfig()
	v1 := &controlplanev1beta1.KThreesControlPlane{}
	if err := storing(stored, lk.ConvertKThreesControlPlaneHubToV1Beta1)(ctx, hub.DeepCopy(), v1); err != nil {
		t.Fatal(err)
	}
	want := []string{"files", "bootCommands", "serverConfig.extraConfig", "agentConfig.extraConfig", "additionalUserData"}
	if got := keptOf(t, v1, hubDataAnnotation)["specPatch"].Withheld; !slices.Equal(got, prefixed("kthreesConfigSpec.", want)) {
		t.Errorf("withheld = %v, want %v", got, want)
	}

	// Meanwhile, at v1beta2: a new server option, the boot commands gone.
	changed := hub.DeepCopy()
	changed.Spec.KThreesConfigSpec.ServerConfig.ExtraConfig = map[string]apiextensionsv1.JSON{"flannel-backend": {Raw: []byte(`"wireguard-native"`)}}
	changed.Spec.KThreesConfigSpec.BootCommands = nil
	stored.put(changed)

	v1.Spec.Version = "v1.32.1+k3s1"
	up := &controlplanev1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneV1Beta1ToHub(ctx, v1, up); err != nil {
		t.Fatal(err)
	}
	wantSpec := changed.Spec.DeepCopy()
	wantSpec.Version = "v1.32.1+k3s1"
	if !apiequality.Semantic.DeepEqual(*wantSpec, up.Spec) {
		t.Errorf("spec after a v1beta1 write = %+v, want the edit and the stored withheld fields %+v", up.Spec, wantSpec)
	}
}

// Without the stored object the withheld fields cannot come back: a named object is
// refused with the fields named, rather than stored without them.
func TestWithheldFieldsWithoutStoredObjectAreRefused(t *testing.T) {
	lk := Lookups{APIVersion: testAPIVersion}
	stored := useStoredObjects(&lk)
	ctx := t.Context()

	cfg := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "c-uid"}, Spec: secretConfigSpecV1Beta2()}
	v1 := &bootstrapv1beta1.KThreesConfig{}
	if err := lk.ConvertKThreesConfigHubToV1Beta1(ctx, cfg.DeepCopy(), v1); err != nil {
		t.Fatal(err)
	}

	err := lk.ConvertKThreesConfigV1Beta1ToHub(ctx, v1.DeepCopy(), &bootstrapv1.KThreesConfig{})
	if err == nil || !strings.Contains(err.Error(), "spec.serverConfig.extraConfig") || !strings.Contains(err.Error(), "write the object at v1beta2") {
		t.Errorf("no stored object: err = %v, want one naming spec.serverConfig.extraConfig", err)
	}

	other := cfg.DeepCopy()
	other.UID = "another-uid"
	stored.put(other)
	if err := lk.ConvertKThreesConfigV1Beta1ToHub(ctx, v1.DeepCopy(), &bootstrapv1.KThreesConfig{}); err == nil || !strings.Contains(err.Error(), "another-uid") {
		t.Errorf("another object of that name stored: err = %v, want a refusal", err)
	}

	// A caller that names a stored object without its UID gets nothing of it: the
	// conversion webhook answers whoever reaches it, and the withheld fields may hold
	// credentials. Every write of an existing object carries the stored UID.
	stored.put(cfg.DeepCopy())
	anonymous := v1.DeepCopy()
	anonymous.UID = ""
	hub := &bootstrapv1.KThreesConfig{}
	if err := lk.ConvertKThreesConfigV1Beta1ToHub(ctx, anonymous, hub); err == nil || hub.Spec.ServerConfig.ExtraConfig != nil {
		t.Errorf("a name without a UID: err = %v, extraConfig %v; want a refusal and nothing of the stored object", err, hub.Spec.ServerConfig.ExtraConfig)
	}

	lk.Stored = nil
	if err := lk.ConvertKThreesConfigV1Beta1ToHub(ctx, v1.DeepCopy(), &bootstrapv1.KThreesConfig{}); err == nil {
		t.Error("no reader of stored objects: the object was converted without its withheld fields")
	}

	// The apiserver converts partial objects without a name (for managedFields); it
	// never stores those.
	partial := &bootstrapv1beta1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Annotations: v1.Annotations}}
	hub = &bootstrapv1.KThreesConfig{}
	if err := lk.ConvertKThreesConfigV1Beta1ToHub(ctx, partial, hub); err != nil {
		t.Errorf("object without a name: %v", err)
	}
	if hub.Spec.ServerConfig.ExtraConfig != nil || hub.Spec.Format != bootstrapv1.Ignition {
		t.Errorf("object without a name: spec = %+v, want the kept fields without the withheld ones", hub.Spec)
	}
}
