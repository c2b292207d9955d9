package controlplane

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/workload"
)

// observed is what one pass saw; status is computed from it alone, fresh every pass,
// so nothing in status outlives the fact it reports.
type observed struct {
	machines collections.Machines
	// objects are each server's bootstrap config and infrastructure machine.
	objects map[string]serverObjects
	// nodes is nil when the workload cluster could not be reached.
	nodes workload.Nodes
	// blocked says why a needed scale operation waits ("" when it does not).
	blocked string
}

func desiredReplicas(kcp *controlplanev1.KThreesControlPlane) int32 {
	return ptr.Deref(kcp.Spec.Replicas, 1)
}

// outdated are the servers (not being deleted) that need replacing.
func (o observed) outdated(kcp *controlplanev1.KThreesControlPlane, now time.Time) collections.Machines {
	return o.machines.Filter(collections.Not(collections.HasDeletionTimestamp), func(m *clusterv1.Machine) bool {
		return upToDateReason(m, o.objects[m.Name], kcp, now) != ""
	})
}

// setStatus writes the contract's counters and the machine conditions.
func setStatus(cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, o observed) {
	kcp.Status.Selector = labels.SelectorFromSet(map[string]string{
		clusterv1.ClusterNameLabel:             cluster.Name,
		clusterv1.MachineControlPlaneNameLabel: kcp.Name,
	}).String()
	if o.machines == nil {
		return
	}
	var ready, available, upToDate int32
	var notReady, outdated []string
	now := time.Now()
	for _, m := range o.machines {
		if o.nodes.Ready(m.Name) {
			ready++
			if m.DeletionTimestamp.IsZero() {
				available++
			}
		} else {
			notReady = append(notReady, m.Name)
		}
		if reason := upToDateReason(m, o.objects[m.Name], kcp, now); reason == "" {
			upToDate++
		} else {
			outdated = append(outdated, m.Name+" ("+reason+")")
		}
	}
	kcp.Status.Replicas = ptr.To(int32(o.machines.Len()))
	kcp.Status.ReadyReplicas = ptr.To(ready)
	kcp.Status.AvailableReplicas = ptr.To(available)
	kcp.Status.UpToDateReplicas = ptr.To(upToDate)
	kcp.Status.Version = o.machines.LowestVersion()

	setBool(kcp, controlplanev1.MachinesReadyCondition, len(notReady) == 0,
		controlplanev1.ReadyReason, controlplanev1.NotReadyReason, "Node not Ready for Machine "+list(notReady))
	setBool(kcp, controlplanev1.MachinesUpToDateCondition, len(outdated) == 0,
		controlplanev1.UpToDateReason, controlplanev1.NotUpToDateReason, "Machine needs a rollout: "+list(outdated))
	setScaling(kcp, o)
	setTrueWhen(kcp, controlplanev1.RollingOutCondition, len(outdated) > 0, controlplanev1.RollingOutReason,
		controlplanev1.NotRollingOutReason, "Rolling out: "+list(outdated))
	initialized := ptr.Deref(kcp.Status.Initialization.ControlPlaneInitialized, false)
	tokenOK := conditions.IsTrue(kcp, controlplanev1.TokenAvailableCondition)
	var why []string
	if !initialized {
		why = append(why, "the control plane is not initialized")
	}
	if ready == 0 {
		why = append(why, "no server's node is Ready")
	}
	if !tokenOK {
		why = append(why, "the join token is not available")
	}
	setBool(kcp, controlplanev1.AvailableCondition, len(why) == 0,
		controlplanev1.AvailableReason, controlplanev1.NotAvailableReason, strings.Join(why, "; "))
}

func setScaling(kcp *controlplanev1.KThreesControlPlane, o observed) {
	want, have := desiredReplicas(kcp), int32(o.machines.Len())
	up := fmt.Sprintf("Scaling up from %d to %d servers", have, want)
	down := fmt.Sprintf("Scaling down from %d to %d servers", have, want)
	if o.blocked != "" {
		up += "; " + o.blocked
		down += "; " + o.blocked
	}
	setTrueWhen(kcp, controlplanev1.ScalingUpCondition, have < want, controlplanev1.ScalingUpReason, controlplanev1.NotScalingUpReason, up)
	setTrueWhen(kcp, controlplanev1.ScalingDownCondition, have > want, controlplanev1.ScalingDownReason, controlplanev1.NotScalingDownReason, down)
}

// setBool sets a condition that is good when True; falseMessage explains False.
func setBool(kcp *controlplanev1.KThreesControlPlane, t string, ok bool, trueReason, falseReason, falseMessage string) {
	c := metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: trueReason}
	if !ok {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, falseReason, falseMessage
	}
	conditions.Set(kcp, c)
}

// setTrueWhen sets a condition that reports an ongoing operation; message explains True.
func setTrueWhen(kcp *controlplanev1.KThreesControlPlane, t string, on bool, trueReason, falseReason, message string) {
	c := metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: falseReason}
	if on {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, trueReason, message
	}
	conditions.Set(kcp, c)
}

func list(names []string) string { return strings.Join(sorted(names), ", ") }
