package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// canUpdateInPlace asks every extension registered for CanUpdateMachine whether it can
// bring the server from its current objects to want. Each extension answers with
// patches to the current objects' specs for the changes it covers; they are applied in
// turn, and the server can be updated in place once the patched current objects equal
// the desired ones. It returns "" when they do, else why not. An error (an extension
// that cannot be reached, answers Failure or sends patches that do not apply) is no
// answer: the caller retries rather than replace a server that might have been
// updated. (A handler registered with failurePolicy Ignore that cannot be reached
// answers for the Runtime SDK client: Success, no patches, so it covers nothing.)
func (r *Reconciler) canUpdateInPlace(ctx context.Context, m *clusterv1.Machine, objs serverObjects, want inPlaceObjects) (string, error) {
	handlers, err := r.RuntimeClient.GetAllExtensions(ctx, runtimehooksv1.CanUpdateMachine, m)
	if err != nil {
		return "", fmt.Errorf("listing the CanUpdateMachine extensions: %w", err)
	}
	if len(handlers) == 0 {
		return "no update extension is registered for CanUpdateMachine", nil
	}
	req, err := canUpdateRequest(m, objs, want)
	if err != nil {
		return "", err
	}
	slices.Sort(handlers)
	var differ []string
	for _, h := range handlers {
		resp := &runtimehooksv1.CanUpdateMachineResponse{}
		if err := r.RuntimeClient.CallExtension(ctx, runtimehooksv1.CanUpdateMachine, m, h, req, resp); err != nil {
			return "", fmt.Errorf("calling extension %s: %w", h, err)
		}
		if resp.GetStatus() == runtimehooksv1.ResponseStatusFailure {
			return "", fmt.Errorf("extension %s failed: %s", h, resp.GetMessage())
		}
		if err := applyCanUpdatePatches(req, resp); err != nil {
			return "", fmt.Errorf("applying the patches of extension %s: %w", h, err)
		}
		if differ, err = uncovered(req); err != nil {
			return "", err
		}
		if len(differ) == 0 {
			return "", nil
		}
	}
	return "no update extension covers " + strings.Join(differ, ", "), nil
}

// canUpdateRequest is the CanUpdateMachine request for one server: its current
// objects and the desired ones, each with its name, labels, annotations and spec only.
// The KThreesConfig specs are normalized as the up-to-date decision compares them
// (uptodate.go), so that the extension sees exactly the differences that make the
// server outdated.
func canUpdateRequest(m *clusterv1.Machine, objs serverObjects, want inPlaceObjects) (*runtimehooksv1.CanUpdateMachineRequest, error) {
	req := &runtimehooksv1.CanUpdateMachineRequest{
		Current: runtimehooksv1.CanUpdateMachineRequestObjects{Machine: requestMachine(m)},
		Desired: runtimehooksv1.CanUpdateMachineRequestObjects{Machine: requestMachine(want.machine)},
	}
	var err error
	if req.Current.BootstrapConfig, err = rawObject(requestConfig(objs.config)); err != nil {
		return nil, err
	}
	if req.Desired.BootstrapConfig, err = rawObject(requestConfig(want.config)); err != nil {
		return nil, err
	}
	if req.Current.InfrastructureMachine, err = rawObject(requestInfra(objs.infra.Object)); err != nil {
		return nil, err
	}
	if req.Desired.InfrastructureMachine, err = rawObject(requestInfra(want.infra.Object)); err != nil {
		return nil, err
	}
	return req, nil
}

func requestMachine(m *clusterv1.Machine) clusterv1.Machine {
	return clusterv1.Machine{
		TypeMeta: metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine"},
		ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name,
			Labels: m.Labels, Annotations: m.Annotations},
		Spec: *m.Spec.DeepCopy(),
	}
}

func requestConfig(c *bootstrapv1.KThreesConfig) *bootstrapv1.KThreesConfig {
	return &bootstrapv1.KThreesConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: bootstrapv1.GroupVersion.String(), Kind: "KThreesConfig"},
		ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name,
			Labels: c.Labels, Annotations: c.Annotations},
		Spec: normalizedConfigSpec(c.Spec),
	}
}

func requestInfra(u map[string]any) map[string]any {
	out := map[string]any{"apiVersion": u["apiVersion"], "kind": u["kind"], "spec": u["spec"]}
	if md, ok := u["metadata"].(map[string]any); ok {
		keep := map[string]any{}
		for _, k := range []string{"namespace", "name", "labels", "annotations"} {
			if v, ok := md[k]; ok {
				keep[k] = v
			}
		}
		out["metadata"] = keep
	}
	return out
}

// rawObject carries an object as JSON: what goes on the wire, and what the patches and
// the comparison work on, so that both sides of a comparison went through the same
// encoding.
func rawObject(obj any) (runtime.RawExtension, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return runtime.RawExtension{}, fmt.Errorf("encoding a CanUpdateMachine object: %w", err)
	}
	return runtime.RawExtension{Raw: raw}, nil
}

// applyCanUpdatePatches applies an extension's patches to the request's current
// objects. As the protocol says, only their specs count: whatever a patch does
// elsewhere in an object is dropped.
func applyCanUpdatePatches(req *runtimehooksv1.CanUpdateMachineRequest, resp *runtimehooksv1.CanUpdateMachineResponse) error {
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

// uncovered lists what still differs between the request's (patched) current objects
// and the desired ones: the Machine spec fields an in-place update writes (see
// machineSpecForDiff), the KThreesConfig spec, the infrastructure machine spec and the
// template it was cloned from. A new infrastructure template is never covered: the
// patches can only change specs, and a server is judged by its template
// (uptodate.go), so that change always replaces the server.
func uncovered(req *runtimehooksv1.CanUpdateMachineRequest) ([]string, error) {
	var differ []string
	for _, f := range specDiff(machineSpecForDiff(req.Current.Machine.Spec), machineSpecForDiff(req.Desired.Machine.Spec)) {
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
		for _, f := range specDiff(current["spec"], desired["spec"]) {
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

// machineSpecForDiff is the part of a Machine spec an in-place update is about: what
// never changes on a server (its cluster, references, provider ID) and what this
// controller already changes without any update (machine_sync.go) are left out, so the
// version and the failure domain remain.
func machineSpecForDiff(spec clusterv1.MachineSpec) clusterv1.MachineSpec {
	out := *spec.DeepCopy()
	out.ClusterName = ""
	out.Bootstrap = clusterv1.Bootstrap{}
	out.InfrastructureRef = clusterv1.ContractVersionedObjectReference{}
	out.ProviderID = ""
	out.MinReadySeconds = nil
	out.ReadinessGates = nil
	out.Deletion = clusterv1.MachineDeletionSpec{}
	out.Taints = nil
	return out
}

// inPlaceMachineSpec is the Machine spec an in-place update writes: the desired one
// where machineSpecForDiff compares, the current one everywhere else.
func inPlaceMachineSpec(current, desired clusterv1.MachineSpec) clusterv1.MachineSpec {
	out := machineSpecForDiff(desired)
	out.ClusterName = current.ClusterName
	out.Bootstrap = current.Bootstrap
	out.InfrastructureRef = current.InfrastructureRef
	out.ProviderID = current.ProviderID
	out.MinReadySeconds = current.MinReadySeconds
	out.ReadinessGates = current.ReadinessGates
	out.Deletion = current.Deletion
	out.Taints = current.Taints
	return out
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

// specDiff names the top-level fields in which two specs differ, after both went
// through JSON (so empty and unset fields, which the API does not tell apart, are
// equal).
func specDiff(a, b any) []string {
	x, errA := asMap(a)
	y, errB := asMap(b)
	if err := errors.Join(errA, errB); err != nil {
		return []string{"(undecodable: " + err.Error() + ")"}
	}
	var out []string
	for k := range x {
		if !equality.Semantic.DeepEqual(x[k], y[k]) {
			out = append(out, k)
		}
	}
	for k := range y {
		if _, ok := x[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func asMap(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	if err := json.Unmarshal(raw, &out); err != nil && string(raw) != "null" {
		return nil, err
	}
	return out, nil
}
