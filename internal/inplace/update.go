package inplace

import (
	"context"
	"errors"
	"fmt"

	"github.com/blang/semver/v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/cluster-api/controllers/noderefutil"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/k3s"
)

// UpdateMachine drives one Machine's upgrade through SUC. Every call starts from what
// it finds, so that it is idempotent and picks up after a crash: the Node already
// runs the desired version and is Ready → the Plan is deleted and the answer is Done;
// else the Plan is created (or its version corrected) and the answer is "in
// progress", until SUC reports a failure, which is Failed.
//
// Problems that may go away (the workload cluster unreachable, SUC not installed
// yet) answer "in progress" with a message: CAPI's Machine controller shows it in the
// Machine's Updating condition and asks again.
func (e *Extension) UpdateMachine(ctx context.Context, req *runtimehooksv1.UpdateMachineRequest, resp *runtimehooksv1.UpdateMachineResponse) {
	m := &req.Desired.Machine
	log := ctrl.LoggerFrom(ctx).WithValues("Machine", client.ObjectKeyFromObject(m), "hook", "UpdateMachine")
	msg, err := e.updateMachine(ctx, req)
	switch {
	case errors.Is(err, errUpdateFailed):
		resp.SetStatus(runtimehooksv1.ResponseStatusFailure)
		resp.SetMessage(err.Error())
		log.Info("In-place update failed", "reason", err.Error())
	case err != nil:
		resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
		resp.SetRetryAfterSeconds(e.retryAfter())
		resp.SetMessage(err.Error())
		log.Info("In-place update waiting", "reason", err.Error())
	case msg == "":
		resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
		resp.SetMessage("the Node runs the desired k3s version and is Ready")
		log.Info("In-place update done")
	default:
		resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
		resp.SetRetryAfterSeconds(e.retryAfter())
		resp.SetMessage(msg)
		log.V(4).Info("In-place update in progress", "status", msg)
	}
}

// errUpdateFailed marks an answer of Failed: SUC gave up, or the request cannot be
// acted on.
var errUpdateFailed = errors.New("in-place update failed")

// updateMachine is one step; it returns what is in progress, "" when done. What it
// acts on comes from the stored objects (authorizeUpdate); the request only names the
// Machine.
func (e *Extension) updateMachine(ctx context.Context, req *runtimehooksv1.UpdateMachineRequest) (string, error) {
	objs, err := objectsOf(&req.Desired.Machine, req.Desired.BootstrapConfig, req.Desired.InfrastructureMachine)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errUpdateFailed, err)
	}
	target, err := e.authorizeUpdate(ctx, req, effectiveVersion(objs, machineBase))
	if err != nil {
		return "", err
	}
	want, err := k3s.ParseVersion(target.version)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errUpdateFailed, err)
	}
	stored := target.machine
	if stored.Status.NodeRef.Name == "" {
		return "waiting for the Machine's Node", nil
	}
	wc, err := e.Workload.GetUncachedClient(ctx, target.cluster)
	if err != nil {
		return "", fmt.Errorf("reaching the workload cluster: %w", err)
	}
	node := &corev1.Node{}
	if err := wc.Get(ctx, client.ObjectKey{Name: stored.Status.NodeRef.Name}, node); err != nil {
		return "", fmt.Errorf("reading Node %s: %w", stored.Status.NodeRef.Name, err)
	}
	plan, err := e.existingPlan(ctx, wc, stored)
	if err != nil {
		return "", err
	}
	if runs(node, want) && noderefutil.IsNodeReady(node) && (plan == nil || !node.Spec.Unschedulable) {
		if plan != nil {
			if err := wc.Delete(ctx, plan); err != nil && !apierrors.IsNotFound(err) {
				return "", fmt.Errorf("deleting Plan %s: %w", plan.GetName(), err)
			}
		}
		return "", ReleaseNode(ctx, wc, node, UpgradeTargetLabel)
	}
	if plan != nil {
		if f := planFailure(plan); f != "" {
			// A failed update leaves no target label: the Node is not held as an
			// upgrade's target after CAPI has given the update up.
			failed := fmt.Errorf("%w: system-upgrade-controller Plan %s/%s: %s", errUpdateFailed, plan.GetNamespace(), plan.GetName(), f)
			return "", errors.Join(failed, ReleaseNode(ctx, wc, node, UpgradeTargetLabel))
		}
	}
	// The skew rules hold for what the Node runs now, whoever asks: CanUpdate… checked
	// them against the Machine's spec, which need not be what runs.
	if running := node.Status.NodeInfo.KubeletVersion; !runs(node, want) {
		if ok, why := versionStep(running, target.version); !ok {
			return "", fmt.Errorf("%w: Node %s: %s", errUpdateFailed, node.Name, why)
		}
	}
	// SUC is looked for only to place a new Plan: an existing one is in SUC's
	// namespace already, and a poll of an upgrade under way costs no more lists.
	namespace := ""
	if plan != nil {
		namespace = plan.GetNamespace()
	} else {
		suc, err := findSUC(ctx, wc)
		if err != nil {
			return "", err
		}
		namespace = suc.namespace
	}
	// The Node is labelled before the Plan exists, so that the Plan never selects
	// nothing, nor anything else.
	if err := TargetNode(ctx, wc, node, UpgradeTargetLabel, PlanName(stored)); err != nil {
		return "", err
	}
	if err := e.ensurePlan(ctx, wc, plan, desiredPlan(stored, target.version, e.planOptions(namespace))); err != nil {
		return "", err
	}
	return fmt.Sprintf("system-upgrade-controller is upgrading Node %s to %s (running %s)",
		node.Name, target.version, node.Status.NodeInfo.KubeletVersion), nil
}

// existingPlan finds the Machine's Plan in whichever namespace it was made (SUC's),
// or nil.
func (e *Extension) existingPlan(ctx context.Context, wc client.Client, m *clusterv1.Machine) (*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(planGVK.GroupVersion().WithKind(planGVK.Kind + "List"))
	if err := wc.List(ctx, list, client.MatchingFields{"metadata.name": PlanName(m)}); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("looking for the Machine's Plan: %w", err)
	}
	for i := range list.Items {
		if list.Items[i].GetAnnotations()[MachineAnnotation] == m.Namespace+"/"+m.Name {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// ensurePlan creates the Plan, or brings an existing one's version and node selector
// to the desired ones (the desired version changed while it ran; a Plan an earlier
// capk3s made selects by host name).
func (e *Extension) ensurePlan(ctx context.Context, wc client.Client, existing, want *unstructured.Unstructured) error {
	if existing == nil {
		if err := wc.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Plan %s/%s: %w", want.GetNamespace(), want.GetName(), err)
		}
		return nil
	}
	v, _, _ := unstructured.NestedString(existing.Object, "spec", "version")
	wantV, _, _ := unstructured.NestedString(want.Object, "spec", "version")
	selector, _, _ := unstructured.NestedFieldCopy(existing.Object, "spec", "nodeSelector")
	wantSelector, _, _ := unstructured.NestedFieldCopy(want.Object, "spec", "nodeSelector")
	if v == wantV && equality.Semantic.DeepEqual(selector, wantSelector) {
		return nil
	}
	if err := unstructured.SetNestedField(existing.Object, wantV, "spec", "version"); err != nil {
		return err
	}
	if err := unstructured.SetNestedField(existing.Object, wantSelector, "spec", "nodeSelector"); err != nil {
		return err
	}
	if err := wc.Update(ctx, existing); err != nil {
		return fmt.Errorf("updating Plan %s/%s to %s: %w", existing.GetNamespace(), existing.GetName(), wantV, err)
	}
	return nil
}

// runs says whether the Node's kubelet reports the k3s version v.
func runs(n *corev1.Node, want semver.Version) bool {
	got, err := k3s.ParseVersion(n.Status.NodeInfo.KubeletVersion)
	return err == nil && k3s.CompareVersions(got, want) == 0
}
