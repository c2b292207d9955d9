package controlplane

import (
	"context"
	"errors"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/workload"
)

// observeMismatches compares the servers with their Nodes (workload.FindMismatches):
// Cluster API waits forever for a Node whose providerID is not the Machine's, and an
// air-gapped image may run another k3s than asked. Servers being updated in place are
// not judged by version: their Node catches up. An unreadable workload cluster gives
// nothing to report; the pass goes on either way, as this only informs.
func (r *Reconciler) observeMismatches(ctx context.Context, cluster *clusterv1.Cluster, seen *observed) {
	if seen.nodes == nil || seen.machines.Len() == 0 {
		return
	}
	m, err := workload.FindMismatches(ctx, r.ClusterCache, client.ObjectKeyFromObject(cluster), seen.machines, seen.nodes, updatingInPlace)
	if err != nil {
		if !errors.Is(err, workload.ErrNotConnected) {
			ctrl.LoggerFrom(ctx).Error(err, "Comparing servers with their Nodes")
		}
		return
	}
	seen.mismatches = m
}

// setNodesMatch writes NodesMatchMachines: False while a mismatch is seen, absent
// otherwise. A providerID mismatch comes first: such a server never counts.
func setNodesMatch(kcp *controlplanev1.KThreesControlPlane, m workload.Mismatches) {
	reason, msgs := controlplanev1.ProviderIDMismatchReason, append(append([]string{}, m.ProviderID...), m.Version...)
	if len(m.ProviderID) == 0 {
		reason = controlplanev1.VersionMismatchReason
	}
	if len(msgs) == 0 {
		conditions.Delete(kcp, controlplanev1.NodesMatchMachinesCondition)
		return
	}
	conditions.Set(kcp, metav1.Condition{
		Type: controlplanev1.NodesMatchMachinesCondition, Status: metav1.ConditionFalse,
		Reason: reason, Message: strings.Join(msgs, "; "),
	})
}
