package serverplan

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"

	"github.com/capk3s/capk3s/internal/workload"
)

// A MachineHealthCheck judges a server at one moment and says so on the Machine; the
// control plane acts on that verdict later. When the server's Node became Ready after
// the verdict was given, the verdict is older than the evidence: the health check has
// not looked since the server recovered, and deleting it then would remove a healthy
// etcd member (with three servers of which two had recovered, the one the health
// check re-checked first made the other look safe to delete). Such a mark is left
// alone until the health check looks again, which it does on the Node's change, and
// clears it; a mark it keeps for HealthCheckRecheckGrace after the Node became Ready
// is its verdict on the recovered server (an unhealthy Machine condition, say) and is
// acted on.

const (
	// RemediationWaitingForHealthCheckReason says the only servers marked unhealthy became
	// Ready after they were marked.
	RemediationWaitingForHealthCheckReason = "WaitingForHealthCheck"

	// HealthCheckRecheckGrace is how long a mark older than its Node's recovery is
	// held. A MachineHealthCheck re-checks a Machine within seconds of its Node's
	// change (at most one check per 15 s per health check), so this leaves it several
	// chances, and delays a real remediation of a flapping server by at most this.
	HealthCheckRecheckGrace = 2 * time.Minute
)

// staleMark says, for a server a health check marked unhealthy, whether its Node
// became Ready after the mark and less than HealthCheckRecheckGrace ago; recheck is
// then what remains of that grace. Without a Node, or a Ready one, the mark is current.
func staleMark(m *clusterv1.Machine, nodes workload.Nodes, now time.Time) (markedAt, readyAt time.Time, recheck time.Duration, stale bool) {
	mark := conditions.Get(m, clusterv1.MachineHealthCheckSucceededCondition)
	node, ok := nodes[m.Name]
	if mark == nil || !ok {
		return time.Time{}, time.Time{}, 0, false
	}
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady || c.Status != corev1.ConditionTrue {
			continue
		}
		markedAt, readyAt = mark.LastTransitionTime.Time, c.LastTransitionTime.Time
		recheck = readyAt.Add(HealthCheckRecheckGrace).Sub(now)
		// The Node's time is its kubelet's clock. One running ahead would make the
		// wait longer than the grace, for ever with a clock far enough off: a Ready
		// time in the future holds nothing.
		return markedAt, readyAt, recheck, readyAt.After(markedAt) && recheck > 0 && recheck <= HealthCheckRecheckGrace
	}
	return time.Time{}, time.Time{}, 0, false
}

// splitStaleMarks separates the unhealthy servers whose mark is current from those
// whose mark predates their recovery; for the latter it returns a refusal message
// about the one whose grace ends first, and that time.
func splitStaleMarks(unhealthy collections.Machines, nodes workload.Nodes, now time.Time) (current collections.Machines, message string, recheck time.Duration) {
	current = collections.New()
	for _, m := range unhealthy.SortedByCreationTimestamp() {
		markedAt, readyAt, left, stale := staleMark(m, nodes, now)
		if !stale {
			current.Insert(m)
			continue
		}
		if message == "" || left < recheck {
			recheck = left
			// The deadline, not the time left: a message that changed on every pass
			// would make every pass write the status.
			message = fmt.Sprintf("Not remediating unhealthy Machine %s: its node became Ready at %s, after the MachineHealthCheck marked it unhealthy at %s; waiting until %s for the health check to look again",
				m.Name, readyAt.UTC().Format(time.RFC3339), markedAt.UTC().Format(time.RFC3339), now.Add(left).UTC().Format(time.RFC3339))
		}
	}
	return current, message, recheck
}
