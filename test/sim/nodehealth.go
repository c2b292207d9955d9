package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
)

// A test makes a joined machine unhealthy with simv1.NodeReadyAnnotation. Two faults
// are modelled, because k3s shows them differently:
//   - the kubelet reports NotReady (its container runtime is down, say): the kubelet
//     still posts status, with Ready=False, and k3s's server process, which runs the
//     etcd member, is unaffected;
//   - k3s has stopped: nothing posts status any more, and Kubernetes' node lifecycle
//     controller, after its grace period, turns every condition Unknown. On a server
//     the etcd member is in the same process, so it is down too.
//
// In both cases the node lifecycle controller taints the Node (not-ready or
// unreachable, NoSchedule and NoExecute). The simulated cluster runs no
// controller-manager, so the simulator plays that part at once, without a grace
// period: a test's timeouts then start when it sets the annotation.

// nodeHealth is what the simulator makes a Node report.
type nodeHealth string

const (
	nodeHealthy         nodeHealth = simv1.NodeReadyTrue
	nodeKubeletNotReady nodeHealth = simv1.NodeReadyFalse
	nodeK3sStopped      nodeHealth = simv1.NodeReadyUnknown
	// nodeKubeletCertExpired is k3s running with an expired kubelet client
	// certificate (certs.go): the API server refuses the kubelet, so nothing posts the
	// Node's status, while k3s, and a server's etcd member, run on.
	nodeKubeletCertExpired nodeHealth = "kubelet-certificate-expired"
)

// The SimMachine's condition about its Node's health, and its reasons.
const (
	nodeReadyCondition               = "NodeReady"
	nodeReadyReason                  = "KubeletReady"
	nodeKubeletNotReadyReason        = "KubeletNotReady"
	nodeK3sStoppedReason             = "K3sStopped"
	nodeKubeletCertExpiredReason     = "KubeletCertificateExpired"
	nodeReadyAnnotationInvalidReason = "InvalidNodeReadyAnnotation"
)

// What the kubelet and the node lifecycle controller write.
const (
	kubeletNotReadyMessage = "container runtime is down"
	nodeStatusUnknown      = "NodeStatusUnknown"
	nodeStatusUnknownMsg   = "Kubelet stopped posting node status."
)

// nodeHealthOf reads the SimMachine's annotation; a value it does not know is an error
// that names the ones it does.
func nodeHealthOf(sm *simv1.SimMachine) (nodeHealth, error) {
	v, ok := sm.Annotations[simv1.NodeReadyAnnotation]
	if !ok {
		return nodeHealthy, nil
	}
	switch h := nodeHealth(strings.ToLower(strings.TrimSpace(v))); h {
	case nodeHealthy, nodeKubeletNotReady, nodeK3sStopped:
		return h, nil
	default:
		return "", fmt.Errorf("annotation %s is %q; want %q, %q or %q",
			simv1.NodeReadyAnnotation, v, simv1.NodeReadyTrue, simv1.NodeReadyFalse, simv1.NodeReadyUnknown)
	}
}

// setNodeHealth makes the Node show h, as its kubelet and the node lifecycle
// controller would, and says whether its status and its taints changed. A condition
// whose status stays keeps its lastTransitionTime: health checks time from it.
func setNodeHealth(n *corev1.Node, h nodeHealth, now metav1.Time) (statusChanged, taintsChanged bool) {
	want := kubeletConditions(now)
	var taintKey string
	switch h {
	case nodeKubeletNotReady:
		// The kubelet still posts; only Ready changes.
		want[0].Status, want[0].Reason, want[0].Message = corev1.ConditionFalse, nodeKubeletNotReadyReason, kubeletNotReadyMessage
		taintKey = corev1.TaintNodeNotReady
	case nodeK3sStopped, nodeKubeletCertExpired:
		// The lifecycle controller marks every condition the kubelet owned, and keeps
		// the last heartbeat it saw.
		for i := range want {
			want[i].Status, want[i].Reason, want[i].Message = corev1.ConditionUnknown, nodeStatusUnknown, nodeStatusUnknownMsg
			if old := nodeCondition(n, want[i].Type); old != nil {
				want[i].LastHeartbeatTime = old.LastHeartbeatTime
			}
		}
		taintKey = corev1.TaintNodeUnreachable
	}
	for _, w := range want {
		old := nodeCondition(n, w.Type)
		if old != nil && old.Status == w.Status && old.Reason == w.Reason && old.Message == w.Message {
			continue
		}
		if old != nil && old.Status == w.Status {
			w.LastTransitionTime = old.LastTransitionTime
		}
		statusChanged = true
		if old != nil {
			*old = w
		} else {
			n.Status.Conditions = append(n.Status.Conditions, w)
		}
	}
	return statusChanged, setLifecycleTaints(n, taintKey, now)
}

// setLifecycleTaints leaves exactly the node lifecycle controller's taints with the
// given key on the Node (none for ""), and says whether they changed.
func setLifecycleTaints(n *corev1.Node, key string, now metav1.Time) bool {
	isLifecycle := func(t corev1.Taint) bool {
		return t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable
	}
	var kept, had []corev1.Taint
	for _, t := range n.Spec.Taints {
		if isLifecycle(t) {
			had = append(had, t)
		} else {
			kept = append(kept, t)
		}
	}
	var want []corev1.Taint
	if key != "" {
		want = []corev1.Taint{
			{Key: key, Effect: corev1.TaintEffectNoSchedule},
			{Key: key, Effect: corev1.TaintEffectNoExecute, TimeAdded: &now},
		}
	}
	same := slices.EqualFunc(had, want, func(a, b corev1.Taint) bool { return a.Key == b.Key && a.Effect == b.Effect })
	if same {
		return false
	}
	n.Spec.Taints = append(kept, want...)
	return true
}

func nodeCondition(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// keepNodeHealth applies the SimMachine's NodeReadyAnnotation to its joined machine: a
// server whose k3s stopped takes its etcd member down (etcd may lose quorum), and the
// Node shows the fault. It is called on every pass of a provisioned machine, so that
// a Node is put right whatever changed it.
func (r *machineReconciler) keepNodeHealth(ctx context.Context, sm *simv1.SimMachine, wc *workloadCluster) error {
	h, err := nodeHealthOf(sm)
	if err != nil {
		conditions.Set(sm, metav1.Condition{Type: nodeReadyCondition, Status: metav1.ConditionUnknown,
			Reason: nodeReadyAnnotationInvalidReason, Message: err.Error() + "; the Node is left as it is"})
		return nil
	}
	if sm.Status.NodeName == "" || wc == nil {
		return nil
	}
	now := time.Now()
	if h != nodeK3sStopped && wc.kubeletExpired(sm.Status.NodeName, now) {
		h = nodeKubeletCertExpired
	}
	if _, annotated := sm.Annotations[simv1.NodeReadyAnnotation]; !annotated && h == nodeHealthy && (!conditions.Has(sm, nodeReadyCondition) || conditions.IsTrue(sm, nodeReadyCondition)) {
		// Never made unhealthy: the Node is as register left it, nothing to read.
		return nil
	}
	if sm.Status.Role == roleServer {
		if err := wc.setMemberUp(sm.Status.NodeName, h != nodeK3sStopped); err != nil {
			return err
		}
	}
	cl, _, err := wc.ready()
	if err != nil {
		// No API to write to: a lost quorum is for good, a restart is not simulated.
		return nil
	}
	node := &corev1.Node{}
	if err := cl.Get(ctx, client.ObjectKey{Name: sm.Status.NodeName}, node); err != nil {
		// A Node deleted from under its machine stays deleted: the simulated kubelet
		// registers once.
		return client.IgnoreNotFound(err)
	}
	statusChanged, taintsChanged := setNodeHealth(node, h, metav1.NewTime(now))
	if statusChanged {
		taints := node.Spec.Taints
		if err := cl.Status().Update(ctx, node); err != nil {
			return fmt.Errorf("setting Node %s's health to %s: %w", node.Name, h, err)
		}
		// The update answers with the stored spec.
		node.Spec.Taints = taints
	}
	if taintsChanged {
		if err := cl.Update(ctx, node); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("tainting Node %s for %s: %w", node.Name, h, err)
		}
	}
	conditions.Set(sm, nodeReadyConditionFor(h))
	return nil
}

// noticeRestart restarts k3s on a machine held stopped that is to run again: k3s
// renews its certificates as at any start. It comes before the certificates' and the
// Node's care, which then see the renewed certificates.
func noticeRestart(sm *simv1.SimMachine, wc *workloadCluster) {
	h, err := nodeHealthOf(sm)
	if err != nil || h == nodeK3sStopped || wc == nil || sm.Status.NodeName == "" {
		return
	}
	if conditions.GetReason(sm, nodeReadyCondition) == nodeK3sStoppedReason {
		wc.restartK3s(sm.Status.NodeName, time.Now())
	}
}

// nodeReadyConditionFor is the SimMachine's NodeReady condition for a health.
func nodeReadyConditionFor(h nodeHealth) metav1.Condition {
	switch h {
	case nodeKubeletNotReady:
		return metav1.Condition{Type: nodeReadyCondition, Status: metav1.ConditionFalse, Reason: nodeKubeletNotReadyReason,
			Message: "the Node is held NotReady by annotation " + simv1.NodeReadyAnnotation + "; k3s keeps running"}
	case nodeKubeletCertExpired:
		return metav1.Condition{Type: nodeReadyCondition, Status: metav1.ConditionFalse, Reason: nodeKubeletCertExpiredReason,
			Message: "the kubelet's client certificate has expired: the API server refuses it, so the Node's status is Unknown; restarting k3s renews it"}
	case nodeK3sStopped:
		return metav1.Condition{Type: nodeReadyCondition, Status: metav1.ConditionFalse, Reason: nodeK3sStoppedReason,
			Message: "k3s is held stopped by annotation " + simv1.NodeReadyAnnotation + ": the Node's status is Unknown, a server's etcd member is down"}
	default:
		return metav1.Condition{Type: nodeReadyCondition, Status: metav1.ConditionTrue, Reason: nodeReadyReason}
	}
}
