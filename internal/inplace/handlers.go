package inplace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CanUpdateMachine answers for a control-plane Machine: patches for what k3s can
// apply in place, none when the workload cluster has no SUC. Every refusal is a
// Success that covers nothing, which makes the caller roll the machine out; a
// Failure means "no answer yet" (the request unreadable, the workload cluster not
// reachable), and the caller asks again.
func (e *Extension) CanUpdateMachine(ctx context.Context, req *runtimehooksv1.CanUpdateMachineRequest, resp *runtimehooksv1.CanUpdateMachineResponse) {
	m := &req.Desired.Machine
	d, ok := e.decide(ctx, resp, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.ClusterName}, DecideMachine,
		side{&req.Current.Machine, req.Current.BootstrapConfig, req.Current.InfrastructureMachine},
		side{m, req.Desired.BootstrapConfig, req.Desired.InfrastructureMachine})
	if !ok {
		return
	}
	resp.MachinePatch, resp.BootstrapConfigPatch, resp.InfrastructureMachinePatch =
		jsonPatch(d.MachinePatch), jsonPatch(d.BootstrapPatch), jsonPatch(d.InfraPatch)
	ctrl.LoggerFrom(ctx).Info("Answered", "hook", "CanUpdateMachine", "Machine", client.ObjectKeyFromObject(m), "decision", d.Message())
}

// CanUpdateMachineSet answers for a MachineSet's machine template (agents), like
// CanUpdateMachine.
func (e *Extension) CanUpdateMachineSet(ctx context.Context, req *runtimehooksv1.CanUpdateMachineSetRequest, resp *runtimehooksv1.CanUpdateMachineSetResponse) {
	ms := &req.Desired.MachineSet
	d, ok := e.decide(ctx, resp, client.ObjectKey{Namespace: ms.Namespace, Name: ms.Spec.ClusterName}, DecideMachineSet,
		side{&req.Current.MachineSet, req.Current.BootstrapConfigTemplate, req.Current.InfrastructureMachineTemplate},
		side{ms, req.Desired.BootstrapConfigTemplate, req.Desired.InfrastructureMachineTemplate})
	if !ok {
		return
	}
	resp.MachineSetPatch, resp.BootstrapConfigTemplatePatch, resp.InfrastructureMachineTemplatePatch =
		jsonPatch(d.MachinePatch), jsonPatch(d.BootstrapPatch), jsonPatch(d.InfraPatch)
	ctrl.LoggerFrom(ctx).Info("Answered", "hook", "CanUpdateMachineSet", "MachineSet", client.ObjectKeyFromObject(ms), "decision", d.Message())
}

// side is one side (current or desired) of a CanUpdate… request: the Machine or
// MachineSet and its bootstrap and infrastructure objects or templates.
type side struct {
	typed            any
	bootstrap, infra runtime.RawExtension
}

// decide reads both sides of a CanUpdate… request, decides with decideFn (SUC
// permitting) and writes the answer's status and message. When a side cannot be
// read the answer is a Failure and ok is false.
func (e *Extension) decide(ctx context.Context, resp runtimehooksv1.ResponseObject, cluster client.ObjectKey,
	decideFn func(current, desired Objects) Decision, current, desired side) (_ Decision, ok bool) {
	cur, err := objectsOf(current.typed, current.bootstrap, current.infra)
	var des Objects
	if err == nil {
		des, err = objectsOf(desired.typed, desired.bootstrap, desired.infra)
	}
	if err != nil {
		resp.SetStatus(runtimehooksv1.ResponseStatusFailure)
		resp.SetMessage(err.Error())
		return Decision{}, false
	}
	d, err := e.withSUC(ctx, cluster, decideFn(cur, des))
	if err != nil {
		// Not an answer: the caller asks again rather than replacing the machine.
		resp.SetStatus(runtimehooksv1.ResponseStatusFailure)
		resp.SetMessage(err.Error())
		return Decision{}, false
	}
	resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
	resp.SetMessage(d.Message())
	return d, true
}

// withSUC drops every patch of d when the workload cluster has no SUC to run the
// update, and says why. Any other error (the workload cluster unreachable, a list
// that failed) is returned: it says nothing about what the cluster can do, and taken
// for "cannot" it would turn an in-place update into a replacement.
func (e *Extension) withSUC(ctx context.Context, cluster client.ObjectKey, d Decision) (Decision, error) {
	if len(d.Covered) == 0 {
		return d, nil
	}
	if _, err := e.sucOf(ctx, cluster); err != nil {
		if !errors.Is(err, errNoSUC) {
			return Decision{}, err
		}
		return Decision{Refused: append([]string{err.Error() + "; in-place updates need it"}, d.Refused...)}, nil
	}
	return d, nil
}

// objectsOf reads the three objects of a request as JSON maps. The typed object (a
// Machine or MachineSet) goes through JSON too, so that both sides of every
// comparison have the same shape.
func objectsOf(typed any, bootstrap, infra runtime.RawExtension) (Objects, error) {
	var o Objects
	raw, err := json.Marshal(typed)
	if err != nil {
		return o, err
	}
	if err := json.Unmarshal(raw, &o.Machine); err != nil {
		return o, err
	}
	if o.Bootstrap, err = rawMap(bootstrap); err != nil {
		return o, fmt.Errorf("reading the bootstrap object: %w", err)
	}
	if o.Infra, err = rawMap(infra); err != nil {
		return o, fmt.Errorf("reading the infrastructure object: %w", err)
	}
	return o, nil
}

// rawMap is a RawExtension's JSON as a map; nil when empty.
func rawMap(r runtime.RawExtension) (map[string]any, error) {
	raw := r.Raw
	if len(raw) == 0 && r.Object != nil {
		var err error
		if raw, err = json.Marshal(r.Object); err != nil {
			return nil, err
		}
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	m := map[string]any{}
	return m, json.Unmarshal(raw, &m)
}

// jsonPatch is the hook's form of a list of operations; undefined when empty.
func jsonPatch(ops []PatchOp) runtimehooksv1.Patch {
	if len(ops) == 0 {
		return runtimehooksv1.Patch{}
	}
	raw, err := json.Marshal(ops)
	if err != nil {
		// Operations hold only values read from JSON, so this does not happen; no
		// patch covers nothing, which means a rollout.
		return runtimehooksv1.Patch{}
	}
	return runtimehooksv1.Patch{PatchType: runtimehooksv1.JSONPatchType, Patch: raw}
}
