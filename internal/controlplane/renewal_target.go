package controlplane

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/inplace"
)

// A restart Plan runs a privileged Job on the Node it selects. It selects the Node
// that capk3s labelled under node-restriction.kubernetes.io/, which no kubelet may set
// (internal/inplace/plantarget.go), and names the Machine's k3s version, not the one
// the Node reports, which its kubelet writes: these keep the choice of node and of
// upgrade image out of the nodes' hands.

// restartPlanFor labels m's Node as the target of its restart Plan for expiry, and
// returns that Plan, to be created once the label is on.
func (r *Reconciler) restartPlanFor(ctx context.Context, wc client.Client, v renewalView, m *clusterv1.Machine, node *corev1.Node, expiry time.Time) (*unstructured.Unstructured, error) {
	if err := inplace.TargetNode(ctx, wc, node, inplace.RestartTargetLabel, inplace.RenewalPlanName(m, expiry)); err != nil {
		return nil, err
	}
	return inplace.RestartPlan(m, inplace.RestartVersion(m, v.version), expiry, r.renewalPlanOptions(v.sucNamespace)), nil
}

// releaseRestartTarget removes the restart Plan's label from the Node (nil: not known),
// once the Plan is gone.
func releaseRestartTarget(ctx context.Context, wc client.Client, node *corev1.Node) error {
	if node == nil {
		return nil
	}
	return inplace.ReleaseNode(ctx, wc, node, inplace.RestartTargetLabel)
}
