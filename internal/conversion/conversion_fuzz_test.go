package conversion

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	utilconversion "sigs.k8s.io/cluster-api/util/conversion"
	"sigs.k8s.io/randfill"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/scheme"
)

// testAPIVersion stands in for the CRD lookup: every infrastructure group serves v1beta2.
func testAPIVersion(_ context.Context, gk schema.GroupKind) (string, error) {
	return schema.GroupVersion{Group: gk.Group, Version: "v1beta2"}.String(), nil
}

// referenceFuzzers keep references what the API server would accept: an API group is
// a DNS name, and an apiVersion is group/version.
func referenceFuzzers(_ runtimeserializer.CodecFactory) []any {
	group := func(c randfill.Continue) string {
		return fmt.Sprintf("g%d.example.com", c.Intn(5))
	}
	return []any{
		func(ref *clusterv1.ContractVersionedObjectReference, c randfill.Continue) {
			c.FillNoCustom(ref)
			ref.APIGroup = group(c)
		},
		func(ref *corev1.ObjectReference, c randfill.Continue) {
			c.FillNoCustom(ref)
			ref.APIVersion = group(c) + "/v1beta" + fmt.Sprint(c.Intn(3))
		},
	}
}

// jsonFuzzers keep arbitrary JSON values (extraConfig's) valid JSON, as the API
// server would: random bytes would not survive the trip through JSON that every
// conversion takes, whatever the conversion does.
func jsonFuzzers(_ runtimeserializer.CodecFactory) []any {
	return []any{
		func(j *apiextensionsv1.JSON, c randfill.Continue) {
			var v any
			switch c.Intn(4) {
			case 0:
				v = c.String(0)
			case 1:
				v = c.Bool()
			case 2:
				v = c.Int63()
			default:
				v = []string{c.String(0), c.String(0)}
			}
			raw, err := json.Marshal(v)
			if err != nil {
				panic(err)
			}
			j.Raw = raw
		},
	}
}

// asStored makes obj what it would be once stored and read back: the API server keeps
// JSON, where an empty list, map or time and a missing one are the same. Both the
// random objects and the results are compared in that form.
func asStored[T any](t testing.TB, obj T) {
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	v := reflect.ValueOf(obj).Elem()
	v.Set(reflect.Zero(v.Type()))
	if err := json.Unmarshal(b, obj); err != nil {
		t.Fatal(err)
	}
}

// withUID gives a filled object the UID every stored object has: up-conversion takes
// withheld fields only from the stored object with the converted object's UID.
func withUID(o metav1.Object) {
	if o.GetUID() == "" {
		o.SetUID(types.UID("uid-" + o.GetNamespace() + "-" + o.GetName()))
	}
}

// storedFuzzers fill each top-level kind at random, then keep it as stored.
func storedFuzzers(t testing.TB) fuzzer.FuzzerFuncs {
	return func(_ runtimeserializer.CodecFactory) []any {
		return []any{
			func(o *bootstrapv1.KThreesConfig, c randfill.Continue) { c.FillNoCustom(o); withUID(o); asStored(t, o) },
			func(o *bootstrapv1beta1.KThreesConfig, c randfill.Continue) {
				c.FillNoCustom(o)
				withUID(o)
				// Dropped on purpose when converting up (it holds the join token).
				o.Status.BootstrapData = nil
				asStored(t, o)
			},
			func(o *bootstrapv1.KThreesConfigTemplate, c randfill.Continue) {
				c.FillNoCustom(o)
				withUID(o)
				asStored(t, o)
			},
			func(o *bootstrapv1beta1.KThreesConfigTemplate, c randfill.Continue) {
				c.FillNoCustom(o)
				withUID(o)
				asStored(t, o)
			},
			func(o *controlplanev1.KThreesControlPlane, c randfill.Continue) {
				c.FillNoCustom(o)
				withUID(o)
				asStored(t, o)
			},
			func(o *controlplanev1beta1.KThreesControlPlane, c randfill.Continue) {
				c.FillNoCustom(o)
				withUID(o)
				asStored(t, o)
			},
		}
	}
}

// TestFuzzyConversion runs Cluster API's round-trip checks on every kind served at
// v1beta1: 10,000 random objects each way, v1beta1 -> v1beta2 -> v1beta1 and
// v1beta2 -> v1beta1 -> v1beta2, must come back equal. Going down stores the hub
// object, which is where the withheld fields come back from. The kept data makes
// these pass whatever the mappings do; TestMappingsWithoutKeptData checks those.
func TestFuzzyConversion(t *testing.T) {
	lk := Lookups{APIVersion: testAPIVersion}
	stored := useStoredObjects(&lk)
	s := scheme.ForControlPlane()
	funcs := []fuzzer.FuzzerFuncs{referenceFuzzers, jsonFuzzers, storedFuzzers(t)}

	t.Run("KThreesConfig", utilconversion.SpokeConverterFuzzTestFunc(utilconversion.SpokeConverterFuzzTestFuncInput[*bootstrapv1.KThreesConfig, *bootstrapv1beta1.KThreesConfig]{
		Scheme: s, FuzzerFuncs: funcs,
		HubAfterMutation:      func(o *bootstrapv1.KThreesConfig) { asStored(t, o) },
		SpokeAfterMutation:    func(o *bootstrapv1beta1.KThreesConfig) { asStored(t, o) },
		ConvertHubToSpokeFunc: storing(stored, lk.ConvertKThreesConfigHubToV1Beta1),
		ConvertSpokeToHubFunc: lk.ConvertKThreesConfigV1Beta1ToHub,
	}))
	t.Run("KThreesConfigTemplate", utilconversion.SpokeConverterFuzzTestFunc(utilconversion.SpokeConverterFuzzTestFuncInput[*bootstrapv1.KThreesConfigTemplate, *bootstrapv1beta1.KThreesConfigTemplate]{
		Scheme: s, FuzzerFuncs: funcs,
		HubAfterMutation:      func(o *bootstrapv1.KThreesConfigTemplate) { asStored(t, o) },
		SpokeAfterMutation:    func(o *bootstrapv1beta1.KThreesConfigTemplate) { asStored(t, o) },
		ConvertHubToSpokeFunc: storing(stored, lk.ConvertKThreesConfigTemplateHubToV1Beta1),
		ConvertSpokeToHubFunc: lk.ConvertKThreesConfigTemplateV1Beta1ToHub,
	}))
	t.Run("KThreesControlPlane", utilconversion.SpokeConverterFuzzTestFunc(utilconversion.SpokeConverterFuzzTestFuncInput[*controlplanev1.KThreesControlPlane, *controlplanev1beta1.KThreesControlPlane]{
		Scheme: s, FuzzerFuncs: funcs,
		HubAfterMutation:      func(o *controlplanev1.KThreesControlPlane) { asStored(t, o) },
		SpokeAfterMutation:    func(o *controlplanev1beta1.KThreesControlPlane) { asStored(t, o) },
		ConvertHubToSpokeFunc: storing(stored, lk.ConvertKThreesControlPlaneHubToV1Beta1),
		ConvertSpokeToHubFunc: lk.ConvertKThreesControlPlaneV1Beta1ToHub,
	}))
}

// corev1ObjectReference is a template reference as v1beta2 can say it: the group's
// version the CRD lookup gives, a kind and a name.
func corev1ObjectReference(apiVersion, kind, name string) corev1.ObjectReference {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return corev1.ObjectReference{APIVersion: gv.Group + "/v1beta2", Kind: kind, Name: name}
}
