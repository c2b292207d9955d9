package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/workload"
)

// Remediation replaces servers that a MachineHealthCheck marked unhealthy (conditions
// HealthCheckSucceeded=False and OwnerRemediated=False, which hand the work to the
// Machine's owner). The unhealthy Machine is deleted here; the regular scale-up then
// creates its replacement, which carries the remediation-for annotation so that a
// replacement that fails in turn is counted as a retry of the same failure.
//
// The rules are KubeadmControlPlane's, applied to k3s's embedded etcd:
//   - one remediation at a time: none while the kcp carries the in-progress annotation
//     (an unhealthy server was deleted and its replacement is not created yet);
//   - none while another server is being deleted; after initialization, none while a
//     server that is not marked unhealthy has no Ready node (it is still provisioning,
//     or its state is not settled), nor while the workload cluster's nodes cannot be
//     seen;
//   - none that would lose etcd quorum (see quorumAfterRemoval); this also refuses to
//     delete the only server of an initialized cluster, whose etcd data would be lost
//     with it and whose replacement would have nothing to join. Before initialization
//     the first server may be remediated: there is no data to lose, and a server that
//     never came up would otherwise block the cluster forever;
//   - a server whose node became Ready after the health check marked it waits for
//     the health check to look again (see remediation_stale.go);
//   - a server that is itself a replacement made less than minHealthyPeriod after the
//     remediation it replaced is a retry: refused once maxRetry retries were made, and
//     delayed until retryPeriod has passed since the previous remediation.

const (
	// remediatingCondition reports remediation on the KThreesControlPlane: True while an
	// unhealthy server is being replaced, False with a reason saying why an unhealthy
	// server is not replaced, False/NotRemediating when there is nothing to do.
	remediatingCondition = "Remediating"

	// remediationInProgressAnnotation is on the KThreesControlPlane from the deletion
	// of an unhealthy server until its replacement is created; its value is the
	// remediationData that the replacement must carry.
	remediationInProgressAnnotation = "controlplane.cluster.x-k8s.io/remediation-in-progress"
	// remediationForAnnotation is on a replacement Machine; its value is the
	// remediationData of the remediation that created it.
	remediationForAnnotation = "controlplane.cluster.x-k8s.io/remediation-for"

	// Reasons of the Remediating condition.
	remediatingReason                       = "Remediating"
	notRemediatingReason                    = "NotRemediating"
	remediationWouldLoseQuorumReason        = "WouldLoseEtcdQuorum"
	remediationMaxRetryReachedReason        = "MaxRetryReached"
	remediationWaitingForRetryPeriodReason  = "WaitingForRetryPeriod"
	remediationWaitingForDeletionReason     = "WaitingForDeletion"
	remediationWaitingForProvisioningReason = "WaitingForProvisioning"
	remediationNodesUnknownReason           = "NodesUnknown"
	remediationDeletionFailedReason         = "DeletionFailed"

	// defaultMinHealthyPeriod is how long a replacement must stay healthy before a new
	// failure starts a new retry sequence, when the spec does not say.
	defaultMinHealthyPeriod = time.Hour
)

// remediationData is the value of both annotations. Its JSON is KCP's, so that tools
// that read KCP's annotations read these too.
type remediationData struct {
	// Machine is the name of the remediated (deleted) Machine.
	Machine string `json:"machine"`
	// Timestamp is when it was deleted.
	Timestamp metav1.Time `json:"timestamp"`
	// RetryCount counts the remediations of the same original failure before this one.
	RetryCount int32 `json:"retryCount"`
}

func (d remediationData) marshal() (string, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return "", fmt.Errorf("encoding remediation data: %w", err)
	}
	return string(b), nil
}

func parseRemediationData(value string) (*remediationData, error) {
	d := &remediationData{}
	if err := json.Unmarshal([]byte(value), d); err != nil {
		return nil, fmt.Errorf("decoding remediation data %q: %w", value, err)
	}
	return d, nil
}

// remediationFor returns the annotation that a server created now must carry because
// it replaces a remediated one, and whether one is due (the kcp carries the
// in-progress annotation). The caller, once the Machine is created, must remove the
// in-progress annotation from the kcp: the remediation is then complete.
func remediationFor(kcp *controlplanev1.KThreesControlPlane) (key, value string, ok bool) {
	value, ok = kcp.Annotations[remediationInProgressAnnotation]
	if !ok {
		return "", "", false
	}
	return remediationForAnnotation, value, true
}

// remediationDecision is what decideRemediation concluded for one pass.
type remediationDecision struct {
	// victim is the server to delete now; nil when none is deleted in this pass.
	victim *clusterv1.Machine
	// data is what the in-progress annotation and status.lastRemediation record when
	// victim is deleted.
	data remediationData
	// inProgress is true while a previous remediation waits for its replacement; the
	// caller must then go on and scale up.
	inProgress bool
	// dropStaleInProgress says the kcp's in-progress annotation no longer describes a
	// pending replacement and must be removed.
	dropStaleInProgress bool
	// wait is the time left until retryPeriod has passed; set only for that wait.
	wait time.Duration
	// recheck is when a mark older than its server's recovery is acted on, unless
	// the health check clears it first; it holds no other step.
	recheck time.Duration
	// reason and message are the Remediating condition's; it is True for remediatingReason.
	reason, message string
}

// decideRemediation applies the remediation rules to what a pass observed; it reads
// nothing else and changes nothing, so that every rule can be tested alone. nodes is
// nil when the workload cluster could not be reached.
func decideRemediation(kcp *controlplanev1.KThreesControlPlane, machines collections.Machines, nodes workload.Nodes, now time.Time) remediationDecision {
	var d remediationDecision
	if value, ok := kcp.Annotations[remediationInProgressAnnotation]; ok {
		pending, err := parseRemediationData(value)
		if err == nil && !inProgressStale(kcp, machines, pending) {
			d.inProgress, d.reason = true, remediatingReason
			if _, ok := machines[pending.Machine]; ok {
				d.message = fmt.Sprintf("Deleting unhealthy Machine %s; its replacement is created once it is gone", pending.Machine)
			} else {
				d.message = fmt.Sprintf("Creating a replacement for unhealthy Machine %s", pending.Machine)
			}
			return d
		}
		// A value that cannot be read, or that describes a remediation whose
		// replacement exists or will never be made, must not block every later
		// remediation: drop it. Only the retry count it carries is lost.
		d.dropStaleInProgress = true
	}

	unhealthy := machines.Filter(collections.IsUnhealthyAndOwnerRemediated, collections.Not(collections.HasDeletionTimestamp))
	if unhealthy.Len() == 0 {
		d.reason = notRemediatingReason
		return d
	}
	current, staleMessage, recheck := splitStaleMarks(unhealthy, nodes, now)
	if current.Len() == 0 {
		d.reason, d.message, d.recheck = remediationWaitingForHealthCheckReason, staleMessage, recheck
		return d
	}
	victim := pickVictim(current, nodes)
	refuse := func(reason, format string, args ...any) remediationDecision {
		d.reason = reason
		d.message = fmt.Sprintf("Not remediating unhealthy Machine %s: ", victim.Name) + fmt.Sprintf(format, args...)
		return d
	}

	// Retry limits first: a refusal for maxRetry is final until someone acts, and
	// reporting it beats reporting a wait that would end in it.
	data, retry := remediationDataFor(kcp, victim, now)
	strategy := ptr.Deref(kcp.Spec.RemediationStrategy, controlplanev1.RemediationStrategy{})
	if retry != nil {
		if strategy.MaxRetry != nil && retry.RetryCount >= *strategy.MaxRetry {
			return refuse(remediationMaxRetryReachedReason,
				"maxRetry %d reached: it replaces Machine %s, remediated at %s, and that failure was already retried %d times",
				*strategy.MaxRetry, retry.Machine, retry.Timestamp.UTC().Format(time.RFC3339), retry.RetryCount)
		}
		if left := retry.Timestamp.Add(strategy.RetryPeriod.Duration).Sub(now); left > 0 {
			d = refuse(remediationWaitingForRetryPeriodReason,
				"waiting for retryPeriod %s since the remediation of Machine %s at %s (until %s)",
				strategy.RetryPeriod.Duration, retry.Machine, retry.Timestamp.UTC().Format(time.RFC3339),
				retry.Timestamp.Add(strategy.RetryPeriod.Duration).UTC().Format(time.RFC3339))
			d.wait = left
			return d
		}
	}

	// One membership change at a time: a deleting server is still leaving etcd.
	if deleting := machines.Filter(collections.HasDeletionTimestamp); deleting.Len() > 0 {
		return refuse(remediationWaitingForDeletionReason, "another machine is being deleted (%s)", list(deleting.Names()))
	}
	if isTrue(kcp.Status.Initialization.ControlPlaneInitialized) {
		if nodes == nil {
			return refuse(remediationNodesUnknownReason, "the workload cluster's nodes cannot be read, so etcd quorum cannot be checked")
		}
		var settling []string
		for _, m := range machines {
			if m.Name != victim.Name && !collections.IsUnhealthy(m) && !nodes.Ready(m.Name) {
				settling = append(settling, m.Name)
			}
		}
		if len(settling) > 0 {
			return refuse(remediationWaitingForProvisioningReason, "waiting for the node of Machine %s to be Ready", list(settling))
		}
		// An external datastore keeps the data whatever happens to the servers: no
		// quorum to protect.
		if members, healthy, quorum, ok := quorumAfterRemoval(machines, nodes, victim); !ok && !externalDatastore(kcp) {
			return refuse(remediationWouldLoseQuorumReason,
				"deleting it would lose etcd quorum: %d servers would remain, %d of them healthy, and quorum needs %d",
				members, healthy, quorum)
		}
	}

	d.victim, d.data = victim, data
	d.reason = remediatingReason
	d.message = fmt.Sprintf("Deleting unhealthy Machine %s to replace it", victim.Name)
	if data.RetryCount > 0 {
		d.message += fmt.Sprintf(" (retry %d)", data.RetryCount)
	}
	return d
}

// inProgressStale says whether a pending remediation no longer waits for anything:
// the remediated Machine is gone and either its replacement exists (the pass that
// created it could not clear the annotation) or no scale-up will create one (replicas
// were lowered meanwhile). While the Machine still exists it is being deleted.
func inProgressStale(kcp *controlplanev1.KThreesControlPlane, machines collections.Machines, pending *remediationData) bool {
	if _, ok := machines[pending.Machine]; ok {
		return false
	}
	if int32(machines.Len()) >= desiredReplicas(kcp) {
		return true
	}
	for _, m := range machines {
		if v, ok := m.Annotations[remediationForAnnotation]; ok {
			if d, err := parseRemediationData(v); err == nil && d.Machine == pending.Machine {
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
func remediationDataFor(kcp *controlplanev1.KThreesControlPlane, victim *clusterv1.Machine, now time.Time) (remediationData, *remediationData) {
	data := remediationData{Machine: victim.Name, Timestamp: metav1.NewTime(now)}
	value, ok := victim.Annotations[remediationForAnnotation]
	if !ok {
		return data, nil
	}
	last, err := parseRemediationData(value)
	if err != nil || last.Timestamp.IsZero() {
		return data, nil
	}
	minHealthy := defaultMinHealthyPeriod
	if rs := kcp.Spec.RemediationStrategy; rs != nil && rs.MinHealthyPeriod != nil {
		minHealthy = rs.MinHealthyPeriod.Duration
	}
	if !now.Before(last.Timestamp.Add(minHealthy)) {
		return data, nil
	}
	data.RetryCount = last.RetryCount + 1
	return data, last
}

// quorumAfterRemoval checks etcd quorum once victim's member is gone: of the n-1
// remaining servers, those with a Ready node that no health check marked unhealthy
// must be at least a majority, floor((n-1)/2)+1. So 3 servers tolerate remediating
// one (2 of 2 healthy, quorum 2) but not two unhealthy ones (1 of 2), 5 servers
// tolerate two unhealthy ones, and a single server is never removed (0 of 0, quorum 1).
// A server's Ready node stands for its etcd member: k3s runs etcd in the server
// process, whose node does not stay Ready without it.
func quorumAfterRemoval(machines collections.Machines, nodes workload.Nodes, victim *clusterv1.Machine) (members, healthy, quorum int, ok bool) {
	for _, m := range machines {
		if m.Name == victim.Name {
			continue
		}
		members++
		if isHealthyServer(m, nodes) {
			healthy++
		}
	}
	quorum = members/2 + 1
	return members, healthy, quorum, healthy >= quorum
}

// isHealthyServer: not going away, not marked unhealthy, its Node Ready, and its etcd
// member not removed. A server whose member k3s has removed stays Ready (k3s keeps
// running) but votes in no quorum, whichever way k3s's member controller recorded the
// removal (k3s.EtcdMemberRemoved).
func isHealthyServer(m *clusterv1.Machine, nodes workload.Nodes) bool {
	if !m.DeletionTimestamp.IsZero() || collections.IsUnhealthy(m) || !nodes.Ready(m.Name) {
		return false
	}
	return !k3s.EtcdMemberRemoved(nodes[m.Name].Annotations)
}

// pickVictim chooses among unhealthy servers the one whose loss costs least: one
// without a Ready node (it serves nothing now) before one with, then the oldest, then
// by name so that every pass picks the same one.
func pickVictim(unhealthy collections.Machines, nodes workload.Nodes) *clusterv1.Machine {
	ms := unhealthy.UnsortedList()
	sort.Slice(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		if ra, rb := nodes.Ready(a.Name), nodes.Ready(b.Name); ra != rb {
			return !ra
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	return ms[0]
}

// reconcileRemediation deletes at most one unhealthy server. done=true means it acted
// (or must wait for retryPeriod) and the caller must not scale in this pass;
// result.RequeueAfter is set only for retryPeriod waits, which no watch would end.
// It sets the Remediating condition and, when it deletes, the kcp's in-progress
// annotation and status.lastRemediation, which the caller's deferred patch writes.
func (r *Reconciler) reconcileRemediation(ctx context.Context, _ *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, seen *observed) (done bool, result ctrl.Result, err error) {
	log := ctrl.LoggerFrom(ctx)
	if err := r.clearRecoveredRemediations(ctx, seen.machines); err != nil {
		return false, ctrl.Result{}, err
	}
	d := decideRemediation(kcp, seen.machines, seen.nodes, time.Now())
	if d.dropStaleInProgress {
		log.Info("Dropping a stale remediation-in-progress annotation", "value", kcp.Annotations[remediationInProgressAnnotation])
		delete(kcp.Annotations, remediationInProgressAnnotation)
	}
	status := metav1.ConditionFalse
	if d.reason == remediatingReason {
		status = metav1.ConditionTrue
	}
	defer func() {
		conditions.Set(kcp, metav1.Condition{Type: remediatingCondition, Status: status, Reason: d.reason, Message: d.message})
	}()

	if d.victim == nil {
		if d.message != "" && !d.inProgress {
			log.V(2).Info("An unhealthy server is not remediated", "reason", d.reason, "why", d.message)
		}
		return d.wait > 0, ctrl.Result{RequeueAfter: max(d.wait, d.recheck)}, nil
	}

	value, err := d.data.marshal()
	if err != nil {
		return false, ctrl.Result{}, err
	}
	if err := r.deleteServer(ctx, kcp, d.victim); err != nil {
		status, d.reason = metav1.ConditionFalse, remediationDeletionFailedReason
		d.message = fmt.Sprintf("Deleting unhealthy Machine %s failed: %v", d.victim.Name, err)
		return false, ctrl.Result{}, fmt.Errorf("deleting unhealthy Machine %s: %w", d.victim.Name, err)
	}
	if kcp.Annotations == nil {
		kcp.Annotations = map[string]string{}
	}
	kcp.Annotations[remediationInProgressAnnotation] = value
	kcp.Status.LastRemediation = &controlplanev1.LastRemediationStatus{
		Machine: d.data.Machine, Time: d.data.Timestamp, RetryCount: d.data.RetryCount,
	}
	log.Info("Deleted an unhealthy control plane Machine to replace it", "Machine", d.victim.Name, "retryCount", d.data.RetryCount)
	return true, ctrl.Result{}, nil
}
