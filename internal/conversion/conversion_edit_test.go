package conversion

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	utilconversion "sigs.k8s.io/cluster-api/util/conversion"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/scheme"
)

const editRounds = 2000

// An edit made through one version changes that field and nothing else: the data
// kept for the other version must not undo it, and must not be lost because of it.
// These go through the paths the plain round trips never take (kept data whose
// digest no longer matches).
func TestEditThroughV1Beta1ChangesOnlyThatField(t *testing.T) {
	lk := Lookups{APIVersion: testAPIVersion}
	stored := useStoredObjects(&lk)
	f := utilconversion.GetFuzzer(scheme.ForControlPlane(), []fuzzer.FuzzerFuncs{referenceFuzzers, jsonFuzzers, storedFuzzers(t)}...)
	ctx := t.Context()

	for range editRounds {
		before := &controlplanev1.KThreesControlPlane{}
		f.Fill(before)
		spoke := &controlplanev1beta1.KThreesControlPlane{}
		if err := storing(stored, lk.ConvertKThreesControlPlaneHubToV1Beta1)(ctx, before.DeepCopy(), spoke); err != nil {
			t.Fatal(err)
		}
		spoke.Spec.Version = "v1.99.0+k3s1"
		spoke.Spec.KThreesConfigSpec.ServerConfig.ClusterDomain = "edited.example"
		spoke.Status.Selector = "edited=true"
		after := &controlplanev1.KThreesControlPlane{}
		if err := lk.ConvertKThreesControlPlaneV1Beta1ToHub(ctx, spoke, after); err != nil {
			t.Fatal(err)
		}
		want := before.DeepCopy()
		want.Spec.Version = "v1.99.0+k3s1"
		want.Spec.KThreesConfigSpec.ServerConfig.ClusterDomain = "edited.example"
		want.Status.Selector = "edited=true"
		delete(after.Annotations, v1beta1DataAnnotation)
		asStored(t, want)
		asStored(t, after)
		if !apiequality.Semantic.DeepEqual(want, after) {
			t.Fatalf("KThreesControlPlane edited at v1beta1 (-want +got):\n%s", cmp.Diff(want, after))
		}
	}

	for range editRounds {
		before := &bootstrapv1.KThreesConfig{}
		f.Fill(before)
		spoke := &bootstrapv1beta1.KThreesConfig{}
		if err := storing(stored, lk.ConvertKThreesConfigHubToV1Beta1)(ctx, before.DeepCopy(), spoke); err != nil {
			t.Fatal(err)
		}
		spoke.Spec.PreK3sCommands = append(spoke.Spec.PreK3sCommands, "echo edited")
		after := &bootstrapv1.KThreesConfig{}
		if err := lk.ConvertKThreesConfigV1Beta1ToHub(ctx, spoke, after); err != nil {
			t.Fatal(err)
		}
		want := before.DeepCopy()
		want.Spec.PreK3sCommands = append(want.Spec.PreK3sCommands, "echo edited")
		delete(after.Annotations, v1beta1DataAnnotation)
		asStored(t, want)
		asStored(t, after)
		if !apiequality.Semantic.DeepEqual(want, after) {
			t.Fatalf("KThreesConfig edited at v1beta1 (-want +got):\n%s", cmp.Diff(want, after))
		}
	}
}

// The other way: a v1beta1 object stored at v1beta2 and changed there (as a user
// or a controller does) reads back at v1beta1 with that change and its own
// v1beta1-only spec fields, but without v1beta1-only status, which describes an
// older state.
func TestEditThroughV1Beta2KeepsV1Beta1SpecButNotOldStatus(t *testing.T) {
	lk := Lookups{APIVersion: testAPIVersion}
	f := utilconversion.GetFuzzer(scheme.ForControlPlane(), []fuzzer.FuzzerFuncs{referenceFuzzers, jsonFuzzers, storedFuzzers(t)}...)
	ctx := t.Context()

	for range editRounds {
		before := &controlplanev1beta1.KThreesControlPlane{}
		f.Fill(before)
		hub := &controlplanev1.KThreesControlPlane{}
		if err := lk.ConvertKThreesControlPlaneV1Beta1ToHub(ctx, before.DeepCopy(), hub); err != nil {
			t.Fatal(err)
		}
		hub.Spec.Version = "v1.99.0+k3s1"
		hub.Status.ObservedGeneration++
		after := &controlplanev1beta1.KThreesControlPlane{}
		if err := lk.ConvertKThreesControlPlaneHubToV1Beta1(ctx, hub, after); err != nil {
			t.Fatal(err)
		}
		want := before.DeepCopy()
		want.Spec.Version = "v1.99.0+k3s1"
		// The status is v1beta2's, converted afresh.
		want.Status = controlplanev1beta1.KThreesControlPlaneStatus{}
		controlPlaneStatusToV1Beta1(&hub.Status, &want.Status)
		delete(after.Annotations, hubDataAnnotation)
		asStored(t, want)
		asStored(t, after)
		if !apiequality.Semantic.DeepEqual(want, after) {
			t.Fatalf("KThreesControlPlane edited at v1beta2 (-want +got):\n%s", cmp.Diff(want, after))
		}
		if after.Status.FailureReason != "" || after.Status.Conditions != nil {
			t.Fatalf("old v1beta1 status survived a v1beta2 status change: %+v", after.Status)
		}
	}
}
