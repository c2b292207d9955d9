package inplaceplan

import (
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	"github.com/capk3s/capk3s/internal/specdiff"
)

// ApplyPatches applies an extension's patches to the request's current objects. As
// the protocol says, only their specs count: whatever a patch does elsewhere in an
// object is dropped.
func ApplyPatches(req *runtimehooksv1.CanUpdateMachineRequest, resp *runtimehooksv1.CanUpdateMachineResponse) error {
	if resp.MachinePatch.IsDefined() {
		raw, err := json.Marshal(req.Current.Machine)
		if err != nil {
			return err
		}
		patched, err := applySpecPatch(raw, resp.MachinePatch)
		if err != nil {
			return fmt.Errorf("machinePatch: %w", err)
		}
		spec := clusterv1.MachineSpec{}
		if err := json.Unmarshal(patched, &spec); err != nil {
			return fmt.Errorf("machinePatch leaves no valid Machine spec: %w", err)
		}
		req.Current.Machine.Spec = spec
	}
	for _, p := range []struct {
		name  string
		patch runtimehooksv1.Patch
		obj   *runtime.RawExtension
	}{
		{"bootstrapConfigPatch", resp.BootstrapConfigPatch, &req.Current.BootstrapConfig},
		{"infrastructureMachinePatch", resp.InfrastructureMachinePatch, &req.Current.InfrastructureMachine},
	} {
		if !p.patch.IsDefined() {
			continue
		}
		spec, err := applySpecPatch(p.obj.Raw, p.patch)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		if p.obj.Raw, err = withSpec(p.obj.Raw, spec); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	return nil
}

// applySpecPatch applies a JSON patch or JSON merge patch to an object and returns the
// resulting object's spec (JSON).
func applySpecPatch(obj []byte, p runtimehooksv1.Patch) ([]byte, error) {
	var patched []byte
	var err error
	switch p.PatchType {
	case runtimehooksv1.JSONPatchType:
		var ops jsonpatch.Patch
		if ops, err = jsonpatch.DecodePatch(p.Patch); err == nil {
			patched, err = ops.Apply(obj)
		}
	case runtimehooksv1.JSONMergePatchType:
		patched, err = jsonpatch.MergePatch(obj, p.Patch)
	default:
		return nil, fmt.Errorf("unknown patch type %q", p.PatchType)
	}
	if err != nil {
		return nil, err
	}
	var out struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(patched, &out); err != nil {
		return nil, err
	}
	if len(out.Spec) == 0 {
		return []byte("{}"), nil
	}
	return out.Spec, nil
}

// withSpec replaces an object's spec.
func withSpec(obj, spec []byte) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		return nil, err
	}
	m["spec"] = spec
	return json.Marshal(m)
}

// Uncovered lists what still differs between the request's (patched) current objects
// and the desired ones: the Machine spec fields an in-place update writes (all but
// specdiff.InPlaceIgnoredMachineFields), the KThreesConfig spec, the infrastructure
// machine spec and the template it was cloned from. A new infrastructure template is
// never covered: the patches can only change specs, and a server is judged by its
// template (the up-to-date decision), so that change always replaces the server.
func Uncovered(req *runtimehooksv1.CanUpdateMachineRequest) ([]string, error) {
	current, err := machineSpecForDiff(req.Current.Machine.Spec)
	if err != nil {
		return nil, err
	}
	desired, err := machineSpecForDiff(req.Desired.Machine.Spec)
	if err != nil {
		return nil, err
	}
	var differ []string
	for _, f := range specdiff.Fields(current, desired) {
		differ = append(differ, "Machine spec."+f)
	}
	for _, o := range []struct {
		kind             string
		current, desired runtime.RawExtension
		annotations      []string
	}{
		{"KThreesConfig", req.Current.BootstrapConfig, req.Desired.BootstrapConfig, nil},
		{"infrastructure machine", req.Current.InfrastructureMachine, req.Desired.InfrastructureMachine,
			[]string{clusterv1.TemplateClonedFromNameAnnotation, clusterv1.TemplateClonedFromGroupKindAnnotation}},
	} {
		current, desired, err := decodePair(o.current, o.desired)
		if err != nil {
			return nil, fmt.Errorf("decoding the %s: %w", o.kind, err)
		}
		for _, f := range specdiff.Fields(current["spec"], desired["spec"]) {
			differ = append(differ, o.kind+" spec."+f)
		}
		for _, a := range o.annotations {
			if annotation(current, a) != annotation(desired, a) {
				differ = append(differ, o.kind+" annotation "+a)
			}
		}
	}
	return differ, nil
}

// machineSpecForDiff is the part of a Machine spec an in-place update is about, as
// JSON: the fields of specdiff.InPlaceIgnoredMachineFields left out, so the version
// and the failure domain remain.
func machineSpecForDiff(spec clusterv1.MachineSpec) (map[string]any, error) {
	out, err := specdiff.ToMap(spec)
	if err != nil {
		return nil, fmt.Errorf("encoding a Machine spec: %w", err)
	}
	for _, f := range specdiff.InPlaceIgnoredMachineFields {
		delete(out, f)
	}
	return out, nil
}

// MachineSpec is the Machine spec an in-place update writes: the desired one where
// the coverage compares (Uncovered), the current one in every field of
// specdiff.InPlaceIgnoredMachineFields.
func MachineSpec(current, desired clusterv1.MachineSpec) (clusterv1.MachineSpec, error) {
	cur, err := specdiff.ToMap(current)
	if err != nil {
		return clusterv1.MachineSpec{}, fmt.Errorf("encoding the current Machine spec: %w", err)
	}
	out, err := specdiff.ToMap(desired)
	if err != nil {
		return clusterv1.MachineSpec{}, fmt.Errorf("encoding the desired Machine spec: %w", err)
	}
	for _, f := range specdiff.InPlaceIgnoredMachineFields {
		if v, ok := cur[f]; ok {
			out[f] = v
		} else {
			delete(out, f)
		}
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return clusterv1.MachineSpec{}, fmt.Errorf("encoding the Machine spec an in-place update writes: %w", err)
	}
	spec := clusterv1.MachineSpec{}
	if err := json.Unmarshal(raw, &spec); err != nil {
		return clusterv1.MachineSpec{}, fmt.Errorf("decoding the Machine spec an in-place update writes: %w", err)
	}
	return spec, nil
}

func decodePair(a, b runtime.RawExtension) (map[string]any, map[string]any, error) {
	var x, y map[string]any
	if err := json.Unmarshal(a.Raw, &x); err != nil {
		return nil, nil, err
	}
	if err := json.Unmarshal(b.Raw, &y); err != nil {
		return nil, nil, err
	}
	return x, y, nil
}

func annotation(obj map[string]any, key string) string {
	md, _ := obj["metadata"].(map[string]any)
	a, _ := md["annotations"].(map[string]any)
	s, _ := a[key].(string)
	return s
}
