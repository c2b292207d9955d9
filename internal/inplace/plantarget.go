package inplace

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A Plan runs privileged on whichever Nodes its nodeSelector selects, so it must
// select by a label that only capk3s can set. kubernetes.io/hostname is not one: it
// is among the labels a kubelet may set on its own Node (k8s.io/kubelet's
// KubeletLabels), so a node could take another's host name and get that node's Plan,
// or change its own and escape it. The NodeRestriction admission plugin forbids a
// kubelet to add, change or remove any label under node-restriction.kubernetes.io/
// (plugin/pkg/admission/noderestriction, getForbiddenLabels), and k3s always enables
// it (pkg/daemons/control/server.go, enable-admission-plugins=NodeRestriction, k3s
// v1.34-v1.36). So capk3s, through the workload cluster's client, labels the target
// Node under that prefix before it creates the Plan, the Plan selects that label, and
// the label goes once the Plan is done. The value is the Plan's name, so that a Node
// that lost its Plan is told from one that has it.
//
// SUC itself still pins the Job's pod to the selected Node by its host name label
// (its job.New), which the Plan cannot change: a node that copies another's host name
// can still be scheduled that Job's pod. docs/security.md says so.
const (
	// UpgradeTargetLabel marks the Node an in-place upgrade Plan runs on.
	UpgradeTargetLabel = corev1.LabelNamespaceNodeRestriction + "/capk3s-upgrade"
	// RestartTargetLabel marks the Node a certificate renewal's restart Plan runs on.
	RestartTargetLabel = corev1.LabelNamespaceNodeRestriction + "/capk3s-restart"
)

// targetSelector is a Plan's nodeSelector for the Node labelled key=plan.
func targetSelector(key, plan string) map[string]any {
	return map[string]any{"matchExpressions": []any{map[string]any{
		"key": key, "operator": "In", "values": []any{plan},
	}}}
}

// TargetNode labels the Node key=plan (nothing is written when it already is).
func TargetNode(ctx context.Context, wc client.Client, node *corev1.Node, key, plan string) error {
	if node.Labels[key] == plan {
		return nil
	}
	if err := patchNodeLabel(ctx, wc, node.Name, key, &plan); err != nil {
		return fmt.Errorf("labelling Node %s as the target of Plan %s: %w", node.Name, plan, err)
	}
	return nil
}

// ReleaseNode removes the Node's key label. It writes even when node, which may come
// from a cache, does not show the label: a cache behind the labelling would leave it.
func ReleaseNode(ctx context.Context, wc client.Client, node *corev1.Node, key string) error {
	if err := patchNodeLabel(ctx, wc, node.Name, key, nil); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing label %s from Node %s: %w", key, node.Name, err)
	}
	return nil
}

// patchNodeLabel sets (value non-nil) or removes one label with a merge patch, which
// leaves every other label as the API server has it.
func patchNodeLabel(ctx context.Context, wc client.Client, name, key string, value *string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]*string{key: value}}})
	if err != nil {
		return err
	}
	node := &corev1.Node{}
	node.Name = name
	return wc.Patch(ctx, node, client.RawPatch(types.MergePatchType, patch))
}
