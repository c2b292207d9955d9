package inplaceplan

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/specdiff"
)

// unitRequest is a CanUpdateMachine request for a server on v1.31 whose control plane
// wants v1.32 and, when configChange, one more disabled component.
func unitRequest(t *testing.T, configChange bool, infraTemplate string) *runtimehooksv1.CanUpdateMachineRequest {
	t.Helper()
	current := &clusterv1.Machine{Spec: clusterv1.MachineSpec{Version: "v1.31.4+k3s1", ProviderID: "sim://a",
		Deletion: clusterv1.MachineDeletionSpec{NodeDrainTimeoutSeconds: new(int32)}}}
	current.Name = "a"
	desired := current.DeepCopy()
	desired.Spec.Version = "v1.32.1+k3s1"
	desired.Spec.ProviderID = ""                        // never compared: the provider's, not the control plane's
	desired.Spec.Deletion.NodeDrainTimeoutSeconds = nil // changed without an update
	config := &bootstrapv1.KThreesConfig{Spec: bootstrapv1.KThreesConfigSpec{ServerConfig: bootstrapv1.KThreesServerConfig{DisableComponents: []string{"traefik"}}}}
	wantConfig := config.DeepCopy()
	if configChange {
		wantConfig.Spec.ServerConfig.DisableComponents = append(wantConfig.Spec.ServerConfig.DisableComponents, "servicelb")
	}
	infra := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "GenericInfrastructureMachine",
		"spec": map[string]any{"size": "small", "providerID": "sim://a"}}}
	infra.SetAnnotations(map[string]string{clusterv1.TemplateClonedFromNameAnnotation: "t", clusterv1.TemplateClonedFromGroupKindAnnotation: "G.x"})
	wantInfra := infra.DeepCopy()
	wantInfra.SetAnnotations(map[string]string{clusterv1.TemplateClonedFromNameAnnotation: infraTemplate, clusterv1.TemplateClonedFromGroupKindAnnotation: "G.x"})
	req, err := CanUpdateRequest(Objects{Machine: current, Config: config, Infra: infra.Object}, Objects{Machine: desired, Config: wantConfig, Infra: wantInfra.Object})
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func jsonPatch(t *testing.T, ops ...map[string]any) runtimehooksv1.Patch {
	t.Helper()
	raw, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	return runtimehooksv1.Patch{PatchType: runtimehooksv1.JSONPatchType, Patch: raw}
}

func mergePatch(raw string) runtimehooksv1.Patch {
	return runtimehooksv1.Patch{PatchType: runtimehooksv1.JSONMergePatchType, Patch: []byte(raw)}
}

var versionPatch = map[string]any{"op": "replace", "path": "/spec/version", "value": "v1.32.1+k3s1"}

// The patches of an answer cover changes only where they make the current objects'
// specs equal the desired ones; everything else still differs, and is named.
func TestCanUpdateCoverage(t *testing.T) {
	for _, tc := range []struct {
		name         string
		configChange bool
		template     string
		resp         runtimehooksv1.CanUpdateMachineResponse
		wantDiffer   []string
	}{
		{"nothing answered", false, "t", runtimehooksv1.CanUpdateMachineResponse{}, []string{"Machine spec.version"}},
		{"version by JSON patch", false, "t", runtimehooksv1.CanUpdateMachineResponse{MachinePatch: jsonPatch(t, versionPatch)}, nil},
		{"version by merge patch", false, "t", runtimehooksv1.CanUpdateMachineResponse{MachinePatch: mergePatch(`{"spec":{"version":"v1.32.1+k3s1"}}`)}, nil},
		{"a wrong version is no cover", false, "t", runtimehooksv1.CanUpdateMachineResponse{MachinePatch: mergePatch(`{"spec":{"version":"v1.33.0+k3s1"}}`)}, []string{"Machine spec.version"}},
		{"the config change uncovered", true, "t", runtimehooksv1.CanUpdateMachineResponse{MachinePatch: jsonPatch(t, versionPatch)}, []string{"KThreesConfig spec.serverConfig"}},
		{"the config change covered", true, "t", runtimehooksv1.CanUpdateMachineResponse{
			MachinePatch:         jsonPatch(t, versionPatch),
			BootstrapConfigPatch: mergePatch(`{"spec":{"serverConfig":{"disableComponents":["traefik","servicelb"]}}}`),
		}, nil},
		{"patches outside spec do not count", false, "t", runtimehooksv1.CanUpdateMachineResponse{
			MachinePatch: mergePatch(`{"metadata":{"name":"other"},"spec":{"version":"v1.32.1+k3s1"}}`),
		}, nil},
		{"a new infrastructure template is never covered", false, "t2", runtimehooksv1.CanUpdateMachineResponse{
			MachinePatch:               jsonPatch(t, versionPatch),
			InfrastructureMachinePatch: mergePatch(`{"metadata":{"annotations":{"cluster.x-k8s.io/cloned-from-name":"t2"}}}`),
		}, []string{"infrastructure machine annotation " + clusterv1.TemplateClonedFromNameAnnotation}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireUncovered(t, unitRequest(t, tc.configChange, tc.template), &tc.resp, tc.wantDiffer)
		})
	}
}

// A patch that cannot be applied, or of a type the protocol does not define, is an
// error (the caller replaces the server), not a silent "covered".
func TestCanUpdatePatchErrors(t *testing.T) {
	for name, p := range map[string]runtimehooksv1.Patch{
		"unknown type":     {PatchType: "StrategicMergePatch", Patch: []byte(`{}`)},
		"bad JSON patch":   {PatchType: runtimehooksv1.JSONPatchType, Patch: []byte(`[{"op":"replace","path":"/spec/nosuch/field","value":1}]`)},
		"undecodable":      {PatchType: runtimehooksv1.JSONMergePatchType, Patch: []byte(`{`)},
		"not a valid spec": {PatchType: runtimehooksv1.JSONMergePatchType, Patch: []byte(`{"spec":{"version":7}}`)},
	} {
		t.Run(name, func(t *testing.T) {
			req := unitRequest(t, false, "t")
			if err := ApplyPatches(req, &runtimehooksv1.CanUpdateMachineResponse{MachinePatch: p}); err == nil {
				t.Error("no error")
			}
		})
	}
}

// The Machine spec an in-place update writes takes from the desired spec exactly what
// the coverage compares, and keeps the rest of the current one.
func TestInPlaceMachineSpec(t *testing.T) {
	req := unitRequest(t, false, "t")
	got, err := MachineSpec(req.Current.Machine.Spec, req.Desired.Machine.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != "v1.32.1+k3s1" || got.ProviderID != "sim://a" || got.Deletion.NodeDrainTimeoutSeconds == nil {
		t.Errorf("written spec %+v: want the desired version and the current provider ID and drain timeout", got)
	}
	written, err := machineSpecForDiff(got)
	if err != nil {
		t.Fatal(err)
	}
	desired, err := machineSpecForDiff(req.Desired.Machine.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if d := specdiff.Fields(written, desired); len(d) != 0 {
		t.Errorf("written spec differs from the desired one in %v", d)
	}
}

// A field set to null is a field unset (the API server keeps no null for it), at any
// depth, as specdiff compares: an extension that answers with a null where the
// desired object has no such field covers it.
func TestCanUpdateCoverageNull(t *testing.T) {
	machine := &clusterv1.Machine{Spec: clusterv1.MachineSpec{Version: "v1.32.1+k3s1"}}
	config := &bootstrapv1.KThreesConfig{}
	infra := map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "GenericInfrastructureMachine",
		"spec": map[string]any{"placement": map[string]any{"region": "r"}}}
	for _, tc := range []struct {
		name       string
		patch      runtimehooksv1.Patch
		wantDiffer []string
	}{
		{"null inside an object", jsonPatch(t, map[string]any{"op": "add", "path": "/spec/placement/zone", "value": nil}), nil},
		{"null at the top", jsonPatch(t, map[string]any{"op": "add", "path": "/spec/zone", "value": nil}), nil},
		{"a value is a difference", jsonPatch(t, map[string]any{"op": "add", "path": "/spec/placement/zone", "value": "a"}),
			[]string{"infrastructure machine spec.placement"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := CanUpdateRequest(Objects{Machine: machine, Config: config, Infra: infra}, Objects{Machine: machine, Config: config, Infra: infra})
			if err != nil {
				t.Fatal(err)
			}
			requireUncovered(t, req, &runtimehooksv1.CanUpdateMachineResponse{InfrastructureMachinePatch: tc.patch}, tc.wantDiffer)
		})
	}
}

// requireUncovered applies the answer resp to req and fails unless exactly want (in
// order) is left uncovered.
func requireUncovered(t *testing.T, req *runtimehooksv1.CanUpdateMachineRequest, resp *runtimehooksv1.CanUpdateMachineResponse, want []string) {
	t.Helper()
	if err := ApplyPatches(req, resp); err != nil {
		t.Fatal(err)
	}
	differ, err := Uncovered(req)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(differ, "|") != strings.Join(want, "|") {
		t.Errorf("uncovered = %q, want %q", differ, want)
	}
}
