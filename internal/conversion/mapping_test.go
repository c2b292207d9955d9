package conversion

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilconversion "sigs.k8s.io/cluster-api/util/conversion"
	"sigs.k8s.io/randfill"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/scheme"
)

const mappingRounds = 2000

func mappingFuzzer(t *testing.T) *randfill.Filler {
	return utilconversion.GetFuzzer(scheme.ForControlPlane(), []fuzzer.FuzzerFuncs{referenceFuzzers, jsonFuzzers, storedFuzzers(t)}...)
}

// The v1beta1 parts of each kind reduced to what v1beta2 can say: a template
// reference as the CRD lookup gives it, whole seconds of drain timeout within int32,
// and no status of the v1beta1 contract.

func expressibleControlPlane(cp *controlplanev1beta1.KThreesControlPlane) {
	cp.Annotations = nil
	ref := &cp.Spec.InfrastructureTemplate
	*ref = corev1ObjectReference(ref.APIVersion, ref.Kind, ref.Name)
	if d := cp.Spec.NodeDrainTimeout; d != nil {
		d.Duration = d.Truncate(time.Second) % (1 << 31 * time.Second)
	}
	cp.Status.Conditions, cp.Status.FailureReason, cp.Status.FailureMessage, cp.Status.Ready = nil, "", nil, false
}

func expressibleConfig(c *bootstrapv1beta1.KThreesConfig) {
	c.Annotations = nil
	c.Status.Conditions, c.Status.FailureReason, c.Status.FailureMessage, c.Status.BootstrapData = nil, "", "", nil
	if c.Status.DataSecretName != nil && *c.Status.DataSecretName == "" {
		c.Status.DataSecretName = nil
	}
}

// sameNamesSameValues fails the test unless every field of the v1beta1 part whose
// JSON name the v1beta2 part has at the same place holds the same value there: the
// k3s configuration, replicas, version and most of the status keep their names, so a
// mapping that mixes two of them up shows here even when the round trip undoes it.
func sameNamesSameValues[H any](t *testing.T, what string, v1beta1Part any, hubPart *H) {
	t.Helper()
	v1JSON, err := json.Marshal(v1beta1Part)
	if err != nil {
		t.Fatal(err)
	}
	hubJSON, err := json.Marshal(hubPart)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := jsonpatch.MergePatch(hubJSON, v1JSON)
	if err != nil {
		t.Fatal(err)
	}
	// v1beta1's own field names are unknown to H and dropped here.
	var want, got H
	if err := json.Unmarshal(hubJSON, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(merged, &got); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(want, got) {
		t.Fatalf("%s: a v1beta1 field shows another value under its name at v1beta2 (-v1beta2 +v1beta1):\n%s", what, cmp.Diff(want, got))
	}
}

// roundTripped fails the test unless after equals before once both are stored.
func roundTripped[T any](t *testing.T, what string, before, after *T) {
	t.Helper()
	asStored(t, before)
	asStored(t, after)
	if !apiequality.Semantic.DeepEqual(before, after) {
		t.Fatalf("%s lost a field without its kept data (-before +after):\n%s", what, cmp.Diff(before, after))
	}
}

func withoutAnnotation(obj metav1.Object, key string) {
	a := obj.GetAnnotations()
	delete(a, key)
	if len(a) == 0 {
		obj.SetAnnotations(nil)
	}
}

// Every field both versions can say converts by its mapping alone: a v1beta1 object
// converted up and back down, with the kept data removed after each step, comes back
// whole. The kept data would hide a lost mapping (TestFuzzyConversion passes
// whatever the mappings do, the kept patch restoring what a mapping dropped), so
// deleting any line of a mapping fails this test.
func TestMappingsWithoutKeptData(t *testing.T) {
	lk := Lookups{APIVersion: testAPIVersion}
	f := mappingFuzzer(t)
	ctx := t.Context()

	for range mappingRounds {
		before := &controlplanev1beta1.KThreesControlPlane{}
		f.Fill(before)
		expressibleControlPlane(before)
		hub := &controlplanev1.KThreesControlPlane{}
		if err := lk.ConvertKThreesControlPlaneV1Beta1ToHub(ctx, before.DeepCopy(), hub); err != nil {
			t.Fatal(err)
		}
		sameNamesSameValues(t, "KThreesControlPlane spec", before.Spec, &hub.Spec)
		sameNamesSameValues(t, "KThreesControlPlane status", before.Status, &hub.Status)
		withoutAnnotation(hub, v1beta1DataAnnotation)
		after := &controlplanev1beta1.KThreesControlPlane{}
		if err := lk.ConvertKThreesControlPlaneHubToV1Beta1(ctx, hub, after); err != nil {
			t.Fatal(err)
		}
		withoutAnnotation(after, hubDataAnnotation)
		roundTripped(t, "KThreesControlPlane", before, after)
	}

	for range mappingRounds {
		before := &bootstrapv1beta1.KThreesConfig{}
		f.Fill(before)
		expressibleConfig(before)
		hub := &bootstrapv1.KThreesConfig{}
		if err := lk.ConvertKThreesConfigV1Beta1ToHub(ctx, before.DeepCopy(), hub); err != nil {
			t.Fatal(err)
		}
		sameNamesSameValues(t, "KThreesConfig spec", before.Spec, &hub.Spec)
		sameNamesSameValues(t, "KThreesConfig status", before.Status, &hub.Status)
		withoutAnnotation(hub, v1beta1DataAnnotation)
		after := &bootstrapv1beta1.KThreesConfig{}
		if err := lk.ConvertKThreesConfigHubToV1Beta1(ctx, hub, after); err != nil {
			t.Fatal(err)
		}
		withoutAnnotation(after, hubDataAnnotation)
		roundTripped(t, "KThreesConfig", before, after)
	}

	for range mappingRounds {
		before := &bootstrapv1beta1.KThreesConfigTemplate{}
		f.Fill(before)
		before.Annotations = nil
		hub := &bootstrapv1.KThreesConfigTemplate{}
		if err := lk.ConvertKThreesConfigTemplateV1Beta1ToHub(ctx, before.DeepCopy(), hub); err != nil {
			t.Fatal(err)
		}
		sameNamesSameValues(t, "KThreesConfigTemplate spec", before.Spec, &hub.Spec)
		withoutAnnotation(hub, v1beta1DataAnnotation)
		after := &bootstrapv1beta1.KThreesConfigTemplate{}
		if err := lk.ConvertKThreesConfigTemplateHubToV1Beta1(ctx, hub, after); err != nil {
			t.Fatal(err)
		}
		withoutAnnotation(after, hubDataAnnotation)
		roundTripped(t, "KThreesConfigTemplate", before, after)
	}
}

// A v1beta1 object converts up keeping only what v1beta2 cannot say. Manifests written
// for cluster-api-k3s name their infrastructure template at an older apiVersion than
// the CRD's newest: then the reference alone is kept, never the rest of the spec.
// Otherwise nothing is kept at all.
func TestV1Beta1FieldsAllHaveAHome(t *testing.T) {
	lk := Lookups{APIVersion: testAPIVersion}
	f := mappingFuzzer(t)
	ctx := t.Context()

	for i := range mappingRounds {
		spoke := &controlplanev1beta1.KThreesControlPlane{}
		f.Fill(spoke)
		expressibleControlPlane(spoke)
		older := i%2 == 0
		if older {
			spoke.Spec.InfrastructureTemplate.APIVersion = "infrastructure.cluster.x-k8s.io/v1beta1"
		}
		hub := &controlplanev1.KThreesControlPlane{}
		if err := lk.ConvertKThreesControlPlaneV1Beta1ToHub(ctx, spoke, hub); err != nil {
			t.Fatal(err)
		}
		k := keptOf(t, hub, v1beta1DataAnnotation)
		if !older {
			if len(k) > 0 {
				t.Fatalf("v1beta1 data kept although v1beta2 can hold all of it: %s\nobject: %+v", hub.Annotations[v1beta1DataAnnotation], spoke.Spec)
			}
			continue
		}
		want, err := json.Marshal(map[string]any{"infrastructureTemplate": spoke.Spec.InfrastructureTemplate})
		if err != nil {
			t.Fatal(err)
		}
		if p := k["specPatch"]; len(k) != 1 || len(p.Withheld) > 0 || !equalJSON(t, p.Patch, want) {
			t.Fatalf("kept v1beta1 data = %s, want the template reference %s alone", hub.Annotations[v1beta1DataAnnotation], want)
		}
	}

	for range mappingRounds {
		spoke := &bootstrapv1beta1.KThreesConfig{}
		f.Fill(spoke)
		expressibleConfig(spoke)
		hub := &bootstrapv1.KThreesConfig{}
		if err := lk.ConvertKThreesConfigV1Beta1ToHub(ctx, spoke, hub); err != nil {
			t.Fatal(err)
		}
		if v, ok := hub.Annotations[v1beta1DataAnnotation]; ok {
			t.Fatalf("v1beta1 data kept although v1beta2 can hold all of it: %s", v)
		}
	}
}

func equalJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	da, err := decodeObject(a)
	if err != nil {
		t.Fatal(err)
	}
	db, err := decodeObject(b)
	if err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(da, db)
}
