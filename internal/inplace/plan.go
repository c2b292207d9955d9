package inplace

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// The system-upgrade-controller's kind and the names capk3s looks for.
var planGVK = schema.GroupVersionKind{Group: "upgrade.cattle.io", Version: "v1", Kind: "Plan"}

const (
	// sucDeploymentName is the Deployment SUC's release manifests install.
	sucDeploymentName = "system-upgrade-controller"
	// planPrefix starts every Plan name capk3s makes, so they are easy to tell apart.
	planPrefix = "capk3s-"
	// maxPlanName: SUC labels each upgraded Node with plan.upgrade.cattle.io/<plan>,
	// and a label name is at most 63 characters.
	maxPlanName = 63
	// MachineAnnotation on a Plan names the Machine (namespace/name) it upgrades.
	MachineAnnotation = "controlplane.cluster.x-k8s.io/k3s-inplace-machine"
	// Condition types and reasons of a Plan's status, as SUC writes them.
	planComplete       = "Complete"
	planValidated      = "Validated"
	planLatestResolved = "LatestResolved"
	// planErrorReason is the reason SUC gives a condition whose step failed.
	planErrorReason = "Error"
)

// PlanName is the Plan for a Machine: derived from its name, shortened with a hash
// when too long so that two Machines never share one.
func PlanName(machine *clusterv1.Machine) string {
	name := planPrefix + machine.Name
	if len(name) <= maxPlanName {
		return name
	}
	sum := sha256.Sum256([]byte(machine.Namespace + "/" + machine.Name))
	suffix := hex.EncodeToString(sum[:])[:8]
	return strings.TrimRight(name[:maxPlanName-len(suffix)-1], "-.") + "-" + suffix
}

// PlanOptions are the parts of a Plan that depend on how SUC is installed.
type PlanOptions struct {
	// Namespace is where SUC watches Plans (its own Deployment's namespace).
	Namespace string
	// ServiceAccount runs the upgrade Jobs.
	ServiceAccount string
	// Image is the upgrade image, without tag: SUC tags it with the version.
	Image string
}

// desiredPlan upgrades one Node to version: only that Node is selected (the one
// labelled UpgradeTargetLabel=<the Plan's name>, plantarget.go), one at a time; a server is cordoned (its workloads stay, as for a k3s restart), an agent is
// drained first. The Job tolerates every taint: the selector alone picks the Node.
func desiredPlan(machine *clusterv1.Machine, version string, o PlanOptions) *unstructured.Unstructured {
	spec := nodePlanSpec(UpgradeTargetLabel, PlanName(machine), version, o)
	spec["upgrade"] = map[string]any{"image": o.Image}
	if isServer(machine) {
		spec["cordon"] = true
	} else {
		spec["drain"] = map[string]any{"force": true, "ignoreDaemonSets": true, "deleteEmptydirData": true}
	}
	p := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	p.SetGroupVersionKind(planGVK)
	p.SetNamespace(o.Namespace)
	p.SetName(PlanName(machine))
	p.SetLabels(map[string]string{clusterv1.ClusterNameLabel: machine.Spec.ClusterName})
	p.SetAnnotations(map[string]string{MachineAnnotation: machine.Namespace + "/" + machine.Name})
	return p
}

// nodePlanSpec is what every capk3s Plan shares: one Node, the one capk3s labelled
// key=plan (plantarget.go), one at a time, run by the SUC service account with every
// taint tolerated (the selector alone picks the Node), at version (SUC tags the
// upgrade image with it).
func nodePlanSpec(key, plan, version string, o PlanOptions) map[string]any {
	return map[string]any{
		"concurrency":        int64(1),
		"version":            version,
		"nodeSelector":       targetSelector(key, plan),
		"serviceAccountName": o.ServiceAccount,
		"tolerations":        []any{map[string]any{"operator": "Exists"}},
	}
}

func isServer(m *clusterv1.Machine) bool {
	_, ok := m.Labels[clusterv1.MachineControlPlaneLabel]
	return ok
}

// planFailure is SUC's reason to give up on a Plan, or "": an invalid spec, a version
// SUC cannot resolve (no version and no channel: SUC then makes no Job and waits for
// a new spec), or a Job that failed (SUC then leaves Complete False with the Job's
// error).
func planFailure(p *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		t, _ := m["type"].(string)
		s, _ := m["status"].(string)
		reason, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		if s != string(corev1.ConditionFalse) {
			continue
		}
		if t == planValidated || (t == planLatestResolved && reason == planErrorReason) ||
			(t == planComplete && strings.Contains(reason, "Fail")) {
			return strings.TrimSpace(t + " " + reason + ": " + msg)
		}
	}
	return ""
}
