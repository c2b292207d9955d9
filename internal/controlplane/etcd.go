package controlplane

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
)

// Servers run embedded etcd. A server that goes away must leave etcd first: a member
// that is simply switched off stays in the member list and counts against quorum. This
// controller holds no etcd client; it asks k3s to remove the member through the Node,
// which is the interface k3s itself offers for that.
//
// The handshake, one server at a time:
//  1. every server Machine carries the pre-terminate hook etcdMemberHook, so CAPI's
//     Machine controller stops before deleting its infrastructure (after the drain,
//     while k3s still runs on it);
//  2. once the Machine waits at that hook, its Node is annotated remove=true; k3s's
//     etcd member controller removes the member and records it on the Node;
//  3. then the hook is released, and CAPI deletes the machine and the Node.

// etcdMemberHook is this controller's pre-terminate hook on every server Machine: the
// Machine is not terminated until its etcd member has been handed over.
const etcdMemberHook = clusterv1.PreTerminateDeleteHookAnnotationPrefix + "/kthrees-etcd"

// Reasons of the EtcdClusterHealthy condition (KCP's names).
const (
	etcdClusterHealthyReason       = "Healthy"
	etcdClusterNotHealthyReason    = "NotHealthy"
	etcdClusterHealthUnknownReason = "HealthUnknown"
)

// ensureEtcdHook adds the etcd pre-terminate hook to a server Machine that lacks it
// (one created before the hook existed, or adopted) and says whether it changed the
// Machine. A Machine already being deleted is left alone: whether its deletion has
// passed the pre-terminate phase is CAPI's business, and a hook added late would hold
// a Machine this controller never planned to hand over.
func ensureEtcdHook(m *clusterv1.Machine) bool {
	if !m.DeletionTimestamp.IsZero() {
		return false
	}
	if _, ok := m.Annotations[etcdMemberHook]; ok {
		return false
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[etcdMemberHook] = ""
	return true
}

func hasEtcdHook(m *clusterv1.Machine) bool {
	_, ok := m.Annotations[etcdMemberHook]
	return ok
}

// removalRequested says the Node has been asked to leave etcd.
func removalRequested(n *corev1.Node) bool { return k3s.EtcdRemovalRequested(n.Annotations) }

// isEtcdMember says k3s runs an etcd member on the Node; k3s ignores removal requests
// on other Nodes.
func isEtcdMember(n *corev1.Node) bool { return n.Labels[k3s.EtcdRoleLabel] == "true" }

// removalInFlight says k3s was asked to remove the Node's member and has not yet.
func removalInFlight(n *corev1.Node) bool {
	return isEtcdMember(n) && removalRequested(n) && !removalConfirmed(n)
}

// removalConfirmed says k3s has removed the Node's member. k3s from v1.34.2 deletes
// the remove annotation as it records the removal, so the record alone counts: asking
// again would only make k3s's controller fail on every retry, as it also deleted the
// member name it would need.
func removalConfirmed(n *corev1.Node) bool { return k3s.EtcdMemberRemoved(n.Annotations) }

// atPreTerminate says CAPI's Machine controller is done with the drain and waits for
// the pre-terminate hooks: before that the server still serves and must stay a member.
func atPreTerminate(m *clusterv1.Machine) bool {
	c := conditions.Get(m, clusterv1.MachineDeletingCondition)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == clusterv1.MachineDeletingWaitingForPreTerminateHookReason
}

// hasOtherPreTerminateHooks: as KCP does for its own hook, the member goes last, so
// that k3s keeps working on the machine while other pre-terminate hooks run (a server
// that left etcd stops serving).
func hasOtherPreTerminateHooks(m *clusterv1.Machine) bool {
	for k := range m.Annotations {
		if k != etcdMemberHook && strings.HasPrefix(k, clusterv1.PreTerminateDeleteHookAnnotationPrefix) {
			return true
		}
	}
	return false
}

// etcdPlan is what one pass does about etcd membership.
type etcdPlan struct {
	// release are the Machines whose hook comes off now.
	release []*clusterv1.Machine
	// remove is the Machine whose Node is asked to leave etcd now, if any.
	remove *clusterv1.Machine
}

// planEtcdMembership decides, from what the pass saw alone, which hooks to release
// and which member removal to start. It never touches Machines that are not being
// deleted, and it starts a removal only when no other is in flight.
func planEtcdMembership(cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, seen observed) etcdPlan {
	var plan etcdPlan
	leaving := seen.machines.Filter(collections.HasDeletionTimestamp, hasEtcdHook).SortedByDeletionTimestamp()
	if len(leaving) == 0 {
		return plan
	}
	// Nothing to hand over: the whole cluster goes (KCP drops its hooks in this case
	// too, as there is no one left to hand over to), no Node ever registered, or the
	// server is the last member (removing the only member would destroy etcd). A
	// deleted server whose hook is gone has left etcd already.
	members := seen.machines.Filter(func(m *clusterv1.Machine) bool { return m.DeletionTimestamp.IsZero() || hasEtcdHook(m) })
	// An external datastore has no members either: a hook found there (a Machine
	// hooked by hand, say) is released rather than left to block the deletion.
	if externalDatastore(kcp) || !cluster.DeletionTimestamp.IsZero() || !kcp.DeletionTimestamp.IsZero() ||
		!isTrue(kcp.Status.Initialization.ControlPlaneInitialized) || members.Len() <= 1 {
		plan.release = leaving
		return plan
	}
	if seen.nodes == nil {
		// The workload cluster cannot be read; the ClusterCache wakes us when it can.
		return plan
	}
	inFlight := false
	for _, n := range seen.nodes {
		inFlight = inFlight || removalInFlight(n)
	}
	var candidates []*clusterv1.Machine
	for _, m := range leaving {
		n := seen.nodes[m.Name]
		switch {
		case n == nil:
			// No Node: either it never registered (no member to ask about through it),
			// or it has been deleted, and k3s removes the member of a deleted etcd
			// Node by itself.
			plan.release = append(plan.release, m)
		case removalConfirmed(n), !isEtcdMember(n):
			// k3s removed the member, or there is none (k3s would never answer).
			plan.release = append(plan.release, m)
		case !removalRequested(n) && atPreTerminate(m) && !hasOtherPreTerminateHooks(m):
			candidates = append(candidates, m)
		}
	}
	// One member removal at a time: etcd must settle on its new membership before
	// the next change. The oldest deletion goes first; reconcileEtcdMembership checks
	// again on live Nodes, as the cache may not show the last request yet.
	if !inFlight && len(candidates) > 0 {
		plan.remove = candidates[0]
	}
	return plan
}

// reconcileEtcdMembership hands the etcd members of deleted servers over to k3s, one
// at a time, and releases their pre-terminate hooks once k3s confirms (or nothing is
// left to hand over). The Machine watch wakes the control plane when CAPI reaches the
// pre-terminate phase, the workload Node watch when k3s answers; while a removal is in
// flight the pass also asks to be woken (etcd_removal_watch.go).
func (r *Reconciler) reconcileEtcdMembership(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, seen *observed) error {
	if leaving := leavingInFlight(*seen); len(leaving) > 0 && r.ClusterCache != nil {
		// Confirmations the watch may never bring (etcd_removal_watch.go); without a
		// fresh connection this pass, the next one tries again.
		seen.removalInFlight = true
		if read, done, err := r.freshNodeReader(ctx, client.ObjectKeyFromObject(cluster)); err == nil {
			seen.removalInFlight = refreshInFlightRemovals(ctx, seen, leaving, read)
			done()
		}
	}
	plan := planEtcdMembership(cluster, kcp, *seen)
	log := ctrl.LoggerFrom(ctx)
	for _, m := range plan.release {
		before := m.DeepCopy()
		delete(m.Annotations, etcdMemberHook)
		if err := r.Client.Patch(ctx, m, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("releasing the etcd hook of Machine %s: %w", m.Name, err)
		}
		log.Info("Released the etcd pre-terminate hook", "Machine", m.Name)
	}
	if plan.remove == nil {
		return nil
	}
	// The removal just asked for is in flight: its confirmation is looked for too.
	seen.removalInFlight = true
	return r.requestMemberRemoval(ctx, cluster, plan.remove, seen.nodes[plan.remove.Name].Name)
}

// requestMemberRemoval asks k3s to remove the etcd member on the Machine's Node,
// unless a removal is in flight. It reads the Nodes live: the cache may not show the
// request of the previous pass yet, and two removals must never overlap.
func (r *Reconciler) requestMemberRemoval(ctx context.Context, cluster *clusterv1.Cluster, m *clusterv1.Machine, nodeName string) error {
	live, err := r.ClusterCache.GetUncachedClient(ctx, client.ObjectKeyFromObject(cluster))
	if err != nil {
		if errors.Is(err, clustercache.ErrClusterNotConnected) {
			return nil
		}
		return fmt.Errorf("getting a workload cluster client: %w", err)
	}
	nodes := &corev1.NodeList{}
	if err := live.List(ctx, nodes); err != nil {
		return fmt.Errorf("listing workload cluster Nodes: %w", err)
	}
	var node *corev1.Node
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if removalInFlight(n) {
			// Ours from the previous pass, or another; the Node watch brings us back.
			return nil
		}
		if n.Name == nodeName {
			node = n
		}
	}
	if node == nil || !isEtcdMember(node) || removalRequested(node) || removalConfirmed(node) {
		// Gone, or changed since the cache saw it (k3s may have removed the member and
		// consumed the request already): the Node watch brings the next pass.
		return nil
	}
	before := node.DeepCopy()
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[k3s.EtcdRemoveAnnotation] = "true"
	// The merge patch carries the resourceVersion: if the Node changed since the
	// list, the request fails and the next pass decides again.
	if err := live.Patch(ctx, node, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return fmt.Errorf("asking k3s to remove the etcd member of Node %s: %w", node.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Asked k3s to remove the etcd member", "Machine", m.Name, "Node", node.Name)
	return nil
}

// setEtcdHealth sets EtcdClusterHealthy from the servers' Nodes. Without an etcd
// client, membership is read as k3s publishes it: a healthy member is a server whose
// Node is Ready and labelled node-role.kubernetes.io/etcd=true. The condition is True
// when every server is a healthy member and no member removal is pending; False names
// the servers that are not; Unknown when the Nodes could not be read. A deleted server
// whose hook is released has left etcd and is not counted.
func setEtcdHealth(kcp *controlplanev1.KThreesControlPlane, seen observed) {
	c := metav1.Condition{Type: controlplanev1.EtcdClusterHealthyCondition}
	switch {
	case seen.machines.Len() == 0:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, etcdClusterHealthUnknownReason, "There are no servers"
		conditions.Set(kcp, c)
		return
	case seen.unreachable():
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, controlplanev1.WorkloadClusterUnreachableReason, workloadUnreachableMessage
		conditions.Set(kcp, c)
		return
	}
	var unhealthy []string
	for _, m := range seen.machines {
		deleting := !m.DeletionTimestamp.IsZero()
		if deleting && !hasEtcdHook(m) {
			continue
		}
		n := seen.nodes[m.Name]
		var why string
		switch {
		case deleting:
			why = "member removal pending"
		case n == nil:
			why = "no Node"
		case removalConfirmed(n):
			why = "etcd member removed"
		case removalRequested(n):
			why = "member removal requested"
		case !seen.nodes.Ready(m.Name):
			why = "Node not Ready"
		case !isEtcdMember(n):
			why = "Node without the " + k3s.EtcdRoleLabel + " label"
		default:
			continue
		}
		unhealthy = append(unhealthy, m.Name+" ("+why+")")
	}
	setBool(kcp, controlplanev1.EtcdClusterHealthyCondition, len(unhealthy) == 0,
		etcdClusterHealthyReason, etcdClusterNotHealthyReason, "Servers that are not healthy etcd members: "+list(unhealthy))
}

// etcdQuorumView counts, from the servers' Nodes, the etcd members k3s publishes
// (Nodes labelled node-role.kubernetes.io/etcd=true whose removal k3s has not
// confirmed) and the healthy ones among them (Ready, no removal asked). A server
// without a Node is not counted: k3s joins it to etcd as a learner, which does not
// vote, until it runs.
func etcdQuorumView(seen observed) (members, healthy int) {
	for _, m := range seen.machines {
		n := seen.nodes[m.Name]
		if n == nil || !isEtcdMember(n) || removalConfirmed(n) {
			continue
		}
		members++
		if !removalRequested(n) && seen.nodes.Ready(m.Name) {
			healthy++
		}
	}
	return members, healthy
}
