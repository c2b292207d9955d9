package conversion

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// legacyStored is a control plane as an earlier release stored it after a v1beta1
// write: the whole v1beta1 spec and status kept, file contents included.
func legacyStored(t *testing.T, lk Lookups, v1 *controlplanev1beta1.KThreesControlPlane) *controlplanev1.KThreesControlPlane {
	t.Helper()
	hub := &controlplanev1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneV1Beta1ToHub(t.Context(), v1.DeepCopy(), hub); err != nil {
		t.Fatal(err)
	}
	legacy := kept{}
	for name, parts := range map[string][2]any{"spec": {v1.Spec, hub.Spec}, "status": {v1.Status, hub.Status}} {
		data, err := json.Marshal(parts[0])
		if err != nil {
			t.Fatal(err)
		}
		d, err := digest(parts[1])
		if err != nil {
			t.Fatal(err)
		}
		legacy[name] = keptPart{Digest: d, Data: data}
	}
	b, err := json.Marshal(legacy)
	if err != nil {
		t.Fatal(err)
	}
	hub.Annotations = map[string]string{v1beta1DataAnnotation: string(b)}
	return hub
}

// The whole-part data of an earlier release still gives the v1beta1 object it kept,
// and is never written again: not by conversion, and not once the stored object is
// rewritten through the defaulting webhook's MinimizeLegacyKeptData.
func TestLegacyKeptDataIsReadButNotWrittenAgain(t *testing.T) {
	lk := Lookups{APIVersion: testAPIVersion}
	ctx := t.Context()
	v1 := oldTemplateControlPlane("infrastructure.cluster.x-k8s.io/v1beta1", 1500*time.Millisecond)
	hub := legacyStored(t, lk, v1)
	if !strings.Contains(hub.Annotations[v1beta1DataAnnotation], "hunter2") {
		t.Fatal("the earlier release's data does not hold the file content: the premise of this test")
	}

	down := &controlplanev1beta1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneHubToV1Beta1(ctx, hub.DeepCopy(), down); err != nil {
		t.Fatal(err)
	}
	noSecretIn(t, "legacy", "down", down)
	sameAsStored(t, "legacy, down", v1.DeepCopy(), down.DeepCopy())

	up := &controlplanev1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneV1Beta1ToHub(ctx, down, up); err != nil {
		t.Fatal(err)
	}
	noSecretIn(t, "legacy", "down and up", up)
	if k := keptOf(t, up, v1beta1DataAnnotation); k["spec"].Data != nil || k["status"].Data != nil {
		t.Errorf("whole parts written again: %s", up.Annotations[v1beta1DataAnnotation])
	}

	minimized := hub.DeepCopy()
	lk.MinimizeLegacyKeptData(ctx, minimized)
	noSecretIn(t, "legacy", "minimized", minimized)
	if k := keptOf(t, minimized, v1beta1DataAnnotation); len(k) != 2 || k["specPatch"].Patch == nil || k["statusPatch"].Patch == nil {
		t.Errorf("minimized = %s, want the spec and status patches alone", minimized.Annotations[v1beta1DataAnnotation])
	}
	again := &controlplanev1beta1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneHubToV1Beta1(ctx, minimized, again); err != nil {
		t.Fatal(err)
	}
	sameAsStored(t, "legacy, minimized and down", v1.DeepCopy(), again)

	// Changed at v1beta2 since: the old status goes, the reference's apiVersion stays
	// while it names the same template, as converting down would show them.
	edited := hub.DeepCopy()
	edited.Spec.Version = "v1.32.1+k3s1"
	edited.Status.ObservedGeneration = 9
	lk.MinimizeLegacyKeptData(ctx, edited)
	k := keptOf(t, edited, v1beta1DataAnnotation)
	if len(k) != 1 || k["specPatch"].Patch == nil {
		t.Fatalf("minimized after an edit = %s, want the spec patch alone", edited.Annotations[v1beta1DataAnnotation])
	}
	shown := &controlplanev1beta1.KThreesControlPlane{}
	if err := lk.ConvertKThreesControlPlaneHubToV1Beta1(ctx, edited, shown); err != nil {
		t.Fatal(err)
	}
	if shown.Spec.InfrastructureTemplate != v1.Spec.InfrastructureTemplate || shown.Spec.NodeDrainTimeout.Duration != 1500*time.Millisecond ||
		shown.Spec.Version != "v1.32.1+k3s1" || shown.Status.Ready || shown.Status.ObservedGeneration != 9 {
		t.Errorf("shown after an edit and minimizing: spec %+v, status %+v", shown.Spec, shown.Status)
	}
}
