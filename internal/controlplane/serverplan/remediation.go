package serverplan

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/workload"
)

// Remediation replaces servers that a MachineHealthCheck marked unhealthy (conditions
// HealthCheckSucceeded=False and OwnerRemediated=False, which hand the work to the
// Machine's owner). The controller deletes the unhealthy Machine; the regular
// scale-up then creates its replacement, which carries the remediation-for annotation
// so that a replacement that fails in turn is counted as a retry of the same failure.
//
// The rules are KubeadmControlPlane's, applied to k3s's embedded etcd:
//   - one remediation at a time: none while the kcp carries the in-progress annotation
//     (an unhealthy server was deleted and its replacement is not created yet);
//   - none while another server is being deleted; after initialization, none while a
//     server that is not marked unhealthy has no Ready node (it is still provisioning,
//     or its state is not settled), nor while the workload cluster's nodes cannot be
//     seen;
//   - none that would lose etcd quorum (see QuorumAfterRemoval), where a server whose
//     k3s is being restarted is no healthy member (see Restarting); this also refuses to
//     delete the only server of an initialized cluster, whose etcd data would be lost
//     with it and whose replacement would have nothing to join. Before initialization
//     the first server may be remediated: there is no data to lose, and a server that
//     never came up would otherwise block the cluster forever;
//   - a server whose node became Ready after the health check marked it waits for
//     the health check to look again (see remediation_stale.go);
//   - a server that is itself a replacement made less than minHealthyPeriod after the
//     remediation it replaced is a retry: refused once maxRetry retries were made, and
//     delayed until retryPeriod has passed since the previous remediation.

// Reasons of the controller's Remediating condition, as DecideRemediation gives them.
const (
	RemediatingReason                       = "Remediating"
	NotRemediatingReason                    = "NotRemediating"
	RemediationWouldLoseQuorumReason        = "WouldLoseEtcdQuorum"
	RemediationMaxRetryReachedReason        = "MaxRetryReached"
	RemediationWaitingForRetryPeriodReason  = "WaitingForRetryPeriod"
	RemediationWaitingForDeletionReason     = "WaitingForDeletion"
	RemediationWaitingForProvisioningReason = "WaitingForProvisioning"
	RemediationNodesUnknownReason           = "NodesUnknown"
)

// DefaultMinHealthyPeriod is how long a replacement must stay healthy before a new
// failure starts a new retry sequence, when the spec does not say.
const DefaultMinHealthyPeriod = time.Hour

// RemediationDecision is what DecideRemediation concluded for one pass.
type RemediationDecision struct {
	// Victim is the server to delete now; nil when none is deleted in this pass.
	Victim *clusterv1.Machine
	// Data is what the in-progress annotation and status.lastRemediation record when
	// Victim is deleted.
	Data RemediationData
	// InProgress is true while a previous remediation waits for its replacement; the
	// caller must then go on and scale up.
	InProgress bool
	// DropStaleInProgress says the kcp's in-progress annotation no longer describes a
	// pending replacement and must be removed.
	DropStaleInProgress bool
	// Wait is the time left until retryPeriod has passed; set only for that wait.
	Wait time.Duration
	// Recheck is when a mark older than its server's recovery is acted on, unless
	// the health check clears it first; it holds no other step.
	Recheck time.Duration
	// Reason and Message are the Remediating condition's; it is True for
	// RemediatingReason.
	Reason, Message string
}

// DecideRemediation applies the remediation rules to what a pass observed; it reads
// nothing else and changes nothing, so that every rule can be tested alone. nodes is
// nil when the workload cluster could not be reached.
func DecideRemediation(kcp *controlplanev1.KThreesControlPlane, machines collections.Machines, nodes workload.Nodes, now time.Time) RemediationDecision {
	var d RemediationDecision
	if value, ok := kcp.Annotations[RemediationInProgressAnnotation]; ok {
		pending, err := ParseRemediationData(value)
		if err == nil && !inProgressStale(kcp, machines, pending) {
			d.InProgress, d.Reason = true, RemediatingReason
			if _, ok := machines[pending.Machine]; ok {
				d.Message = fmt.Sprintf("Deleting unhealthy Machine %s; its replacement is created once it is gone", pending.Machine)
			} else {
				d.Message = fmt.Sprintf("Creating a replacement for unhealthy Machine %s", pending.Machine)
			}
			return d
		}
		// A value that cannot be read, or that describes a remediation whose
		// replacement exists or will never be made, must not block every later
		// remediation: drop it. Only the retry count it carries is lost.
		d.DropStaleInProgress = true
	}

	unhealthy := machines.Filter(collections.IsUnhealthyAndOwnerRemediated, collections.Not(collections.HasDeletionTimestamp))
	if unhealthy.Len() == 0 {
		d.Reason = NotRemediatingReason
		return d
	}
	current, staleMessage, recheck := splitStaleMarks(unhealthy, nodes, now)
	if current.Len() == 0 {
		d.Reason, d.Message, d.Recheck = RemediationWaitingForHealthCheckReason, staleMessage, recheck
		return d
	}
	victim := pickVictim(current, nodes)
	refuse := func(reason, format string, args ...any) RemediationDecision {
		d.Reason = reason
		d.Message = fmt.Sprintf("Not remediating unhealthy Machine %s: ", victim.Name) + fmt.Sprintf(format, args...)
		return d
	}

	// Retry limits first: a refusal for maxRetry is final until someone acts, and
	// reporting it beats reporting a wait that would end in it.
	data, retry := remediationDataFor(kcp, victim, now)
	strategy := ptr.Deref(kcp.Spec.RemediationStrategy, controlplanev1.RemediationStrategy{})
	if retry != nil {
		if strategy.MaxRetry != nil && retry.RetryCount >= *strategy.MaxRetry {
			return refuse(RemediationMaxRetryReachedReason,
				"maxRetry %d reached: it replaces Machine %s, remediated at %s, and that failure was already retried %d times",
				*strategy.MaxRetry, retry.Machine, retry.Timestamp.UTC().Format(time.RFC3339), retry.RetryCount)
		}
		if left := retry.Timestamp.Add(strategy.RetryPeriod.Duration).Sub(now); left > 0 {
			d = refuse(RemediationWaitingForRetryPeriodReason,
				"waiting for retryPeriod %s since the remediation of Machine %s at %s (until %s)",
				strategy.RetryPeriod.Duration, retry.Machine, retry.Timestamp.UTC().Format(time.RFC3339),
				retry.Timestamp.Add(strategy.RetryPeriod.Duration).UTC().Format(time.RFC3339))
			d.Wait = left
			return d
		}
	}

	// One membership change at a time: a deleting server is still leaving etcd.
	if deleting := machines.Filter(collections.HasDeletionTimestamp); deleting.Len() > 0 {
		return refuse(RemediationWaitingForDeletionReason, "another machine is being deleted (%s)", list(deleting.Names()))
	}
	if initialized(kcp) {
		if nodes == nil {
			return refuse(RemediationNodesUnknownReason, "the workload cluster's nodes cannot be read, so etcd quorum cannot be checked")
		}
		var settling []string
		for _, m := range machines {
			if m.Name != victim.Name && !collections.IsUnhealthy(m) && !nodes.Ready(m.Name) {
				settling = append(settling, m.Name)
			}
		}
		if len(settling) > 0 {
			return refuse(RemediationWaitingForProvisioningReason, "waiting for the node of Machine %s to be Ready", list(settling))
		}
		// An external datastore keeps the data whatever happens to the servers: no
		// quorum to protect.
		if members, healthy, quorum, ok := QuorumAfterRemoval(machines, nodes, victim); !ok && !ExternalDatastore(kcp) {
			return refuse(RemediationWouldLoseQuorumReason,
				"deleting it would lose etcd quorum: %d servers would remain, %d of them healthy, and quorum needs %d%s",
				members, healthy, quorum, restartingNote(machines, victim))
		}
	}

	d.Victim, d.Data = victim, data
	d.Reason = RemediatingReason
	d.Message = fmt.Sprintf("Deleting unhealthy Machine %s to replace it", victim.Name)
	if data.RetryCount > 0 {
		d.Message += fmt.Sprintf(" (retry %d)", data.RetryCount)
	}
	return d
}

// inProgressStale says whether a pending remediation no longer waits for anything:
// the remediated Machine is gone and either its replacement exists (the pass that
// created it could not clear the annotation) or no scale-up will create one (replicas
// were lowered meanwhile). While the Machine still exists it is being deleted.
func inProgressStale(kcp *controlplanev1.KThreesControlPlane, machines collections.Machines, pending *RemediationData) bool {
	if _, ok := machines[pending.Machine]; ok {
		return false
	}
	if int32(machines.Len()) >= DesiredReplicas(kcp) {
		return true
	}
	for _, m := range machines {
		if v, ok := m.Annotations[RemediationForAnnotation]; ok {
			if d, err := ParseRemediationData(v); err == nil && d.Machine == pending.Machine {
				return true
			}
		}
	}
	return false
}

// remediationDataFor returns what the remediation of victim now would record, and the
// previous remediation when this one is a retry of it (nil when it starts a new
// sequence). A replacement that stayed healthy for minHealthyPeriod has proven
// itself: its failure is new. An unreadable remediation-for annotation is treated as
// absent, so that a damaged annotation cannot block remediation for good.
func remediationDataFor(kcp *controlplanev1.KThreesControlPlane, victim *clusterv1.Machine, now time.Time) (RemediationData, *RemediationData) {
	data := RemediationData{Machine: victim.Name, Timestamp: metav1.NewTime(now)}
	value, ok := victim.Annotations[RemediationForAnnotation]
	if !ok {
		return data, nil
	}
	last, err := ParseRemediationData(value)
	if err != nil || last.Timestamp.IsZero() {
		return data, nil
	}
	minHealthy := DefaultMinHealthyPeriod
	if rs := kcp.Spec.RemediationStrategy; rs != nil && rs.MinHealthyPeriod != nil {
		minHealthy = rs.MinHealthyPeriod.Duration
	}
	if !now.Before(last.Timestamp.Add(minHealthy)) {
		return data, nil
	}
	data.RetryCount = last.RetryCount + 1
	return data, last
}
