package controlplane

import (
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/certexpiry"
	"github.com/capk3s/capk3s/internal/controlplane/inplaceplan"
	"github.com/capk3s/capk3s/internal/controlplane/serverplan"
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
	// removalInFlight: k3s has a member removal it has not confirmed yet, which the
	// pass looks at again after removalPoll (etcd_removal_watch.go).
	removalInFlight bool
	// blocked says why a needed scale operation waits ("" when it does not).
	blocked string
	// rolloutSnapshot is RollingOut's reason while the snapshot before the
	// rollout holds it (rollout_snapshot.go); "" otherwise.
	rolloutSnapshot string
	// snapshots are k3s's etcd snapshot records, read only when configured.
	snapshots etcdSnapshots
	// updatingInPlace are the servers being updated in place (inplace.go).
	updatingInPlace []string
	// inPlaceNotStarted are those of them CAPI has not started updating in time
	// (inplace_hold.go), each with since when.
	inPlaceNotStarted []string
	// notInPlace says why the rollout's server is replaced rather than updated in
	// place ("" when in-place updates were not in play).
	notInPlace string
	// criticalChange says why no server may join the running ones: the spec
	// changes a setting k3s servers must share (critical.go); "" when it does not.
	criticalChange string
	// machineCacheBehind says the pass stopped because its Machine list was older
	// than this controller's own writes (machine_expectations.go): nothing that the
	// servers decide is reported from it.
	machineCacheBehind bool
	// leftoversWait is when candidates for leftover server objects are old enough
	// to be judged (leftovers.go); 0 when there are none.
	leftoversWait time.Duration
	// mismatches are servers and Nodes that disagree (status_nodes.go).
	mismatches workload.Mismatches
	// workers and workerNodes are the cluster's agent Machines and their Nodes, read at
	// most once per pass by whichever of certexpiry.go and renewal.go asks first.
	workers         collections.Machines
	workerNodes     workload.Nodes
	workersRead     bool
	workerNodesRead bool
	// renewal is what the pass knows of certificate renewal (renewal.go).
	renewal renewalView
	// certs are the nodes' certificate reports (certexpiry.go).
	certs certExpiry
	// authorities are the cluster CAs' expiry dates, read with the CAs (nil: not read).
	authorities []controlplanev1.CertificateAuthorityStatus
	// caCerts are the CA certificates of those Secrets, by subject and expiry: a
	// node's report names them under its leaf files (certauthorities.go).
	caCerts certexpiry.KnownCAs
	// storedVersion is the resourceVersion of the pass's own guarded write of the
	// control plane (the certificate replacement record), "" when none.
	storedVersion string
}

// unreachable says the pass has servers but could not read their Nodes: the
// workload cluster's API cannot be reached (or not yet). Nothing that depends on the
// Nodes is decided or reported as a fact then.
func (o observed) unreachable() bool { return o.machines.Len() > 0 && o.nodes == nil }

func desiredReplicas(kcp *controlplanev1.KThreesControlPlane) int32 {
	return serverplan.DesiredReplicas(kcp)
}

// outdated are the servers (not being deleted) that need replacing.
func (o observed) outdated(kcp *controlplanev1.KThreesControlPlane, now time.Time) collections.Machines {
	return o.machines.Filter(collections.Not(collections.HasDeletionTimestamp), func(m *clusterv1.Machine) bool {
		return o.replaceReason(m, kcp, now) != ""
	})
}

// replaceReason says why the rollout replaces server m: its spec is outdated
// (upToDateReason, also its Machine's UpToDate condition), or its certificates are due
// and cannot be renewed in place (renewal.go); "" when it stays.
func (o observed) replaceReason(m *clusterv1.Machine, kcp *controlplanev1.KThreesControlPlane, now time.Time) string {
	if reason := upToDateReason(m, o.objects[m.Name], kcp, now); reason != "" {
		return reason
	}
	return o.renewal.replaceReason(m)
}

// setStatus writes the contract's counters and the machine conditions. The counters
// and MachinesReady/MachinesUpToDate come from the Machines' own conditions, as CAPI
// core and its tools read them: Ready and Available are CAPI's Machine controller's
// (Node health, readiness gates, minReadySeconds), UpToDate is this controller's.
func setStatus(cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, o observed) {
	kcp.Status.Selector = labels.SelectorFromSet(map[string]string{
		clusterv1.ClusterNameLabel:             cluster.Name,
		clusterv1.MachineControlPlaneNameLabel: kcp.Name,
	}).String()
	if o.machines == nil {
		return
	}
	setReplicas(kcp, o.machines)
	setRegistration(kcp, o.machines)
	kcp.Status.Versions = versionsOf(o.machines)
	kcp.Status.Version = ""
	if len(kcp.Status.Versions) > 0 {
		kcp.Status.Version = kcp.Status.Versions[0].Version
	}
	now := time.Now()
	setMachinesReady(kcp, o.machines)
	setMachinesUpToDate(kcp, o.machines, now)
	setScaling(kcp, o)
	setRenewalHeld(kcp, o)
	var outdated []string
	for _, m := range o.machines {
		if reason := o.replaceReason(m, kcp, now); reason != "" {
			outdated = append(outdated, m.Name+" ("+reason+")")
		}
	}
	rolling := "Rolling out: " + list(outdated)
	for _, why := range []string{o.notInPlace, o.blocked} {
		if why != "" {
			rolling += "; " + why
		}
	}
	reason := controlplanev1.RollingOutReason
	renewing := o.renewalMessage()
	if renewing != "" {
		if len(outdated) == 0 {
			reason, rolling = controlplanev1.CertificatesRenewingReason, renewing
		} else {
			rolling = renewing + "; " + rolling
		}
	}
	if len(o.updatingInPlace) > 0 {
		reason = controlplanev1.InPlaceUpdatingReason
		rolling = "Updating in place: " + list(o.updatingInPlace) + "; " + rolling
	}
	if len(o.inPlaceNotStarted) > 0 {
		reason = controlplanev1.InPlaceUpdateNotStartedReason
		rolling = inplaceplan.NotStartedMessage(o.inPlaceNotStarted) + "; " + rolling
	}
	if o.rolloutSnapshot != "" && len(o.updatingInPlace) == 0 {
		reason = o.rolloutSnapshot
	}
	if o.criticalChange != "" && o.criticalChange == o.blocked {
		reason = controlplanev1.CriticalSettingChangedReason
	}
	setTrueWhen(kcp, controlplanev1.RollingOutCondition, len(outdated) > 0 || renewing != "", reason,
		controlplanev1.NotRollingOutReason, rolling)
	setAvailable(kcp, o)
	setNodesMatch(kcp, o.mismatches)
}

// setReplicas counts the Machines' conditions, as KCP does, so that readiness gates
// and minReadySeconds count and a Machine whose Ready is Unknown is not ready.
func setReplicas(kcp *controlplanev1.KThreesControlPlane, machines collections.Machines) {
	var ready, available, upToDate int32
	for _, m := range machines {
		if conditions.IsTrue(m, clusterv1.MachineReadyCondition) {
			ready++
		}
		if conditions.IsTrue(m, clusterv1.MachineAvailableCondition) {
			available++
		}
		if conditions.IsTrue(m, clusterv1.MachineUpToDateCondition) {
			upToDate++
		}
	}
	kcp.Status.Replicas = ptr.To(int32(machines.Len()))
	kcp.Status.ReadyReplicas = ptr.To(ready)
	kcp.Status.AvailableReplicas = ptr.To(available)
	kcp.Status.UpToDateReplicas = ptr.To(upToDate)
}

// setAvailable: the control plane is Available once it is initialized, its join
// token is usable and its datastore serves: a quorum of the embedded etcd members
// healthy, or some server Ready in front of an external datastore. Those last facts
// come from the workload cluster's Nodes; when they cannot be read, Available is
// Unknown rather than False, since an unreachable API says nothing about the servers
// (and CAPI copies a False into the Cluster).
func setAvailable(kcp *controlplanev1.KThreesControlPlane, o observed) {
	var why []string
	if !isTrue(kcp.Status.Initialization.ControlPlaneInitialized) {
		why = append(why, "the control plane is not initialized")
	}
	if !conditions.IsTrue(kcp, controlplanev1.TokenAvailableCondition) {
		why = append(why, "the join token is not available")
	}
	if len(why) == 0 && o.unreachable() {
		conditions.Set(kcp, metav1.Condition{
			Type: controlplanev1.AvailableCondition, Status: metav1.ConditionUnknown,
			Reason: controlplanev1.WorkloadClusterUnreachableReason, Message: workloadUnreachableMessage,
		})
		return
	}
	if len(why) == 0 {
		if externalDatastore(kcp) {
			if readyServers(o) == 0 {
				why = append(why, "no server's Node is Ready")
			}
		} else if members, healthy := etcdQuorumView(o); members == 0 || healthy < members/2+1 {
			why = append(why, fmt.Sprintf("%d of %d etcd members are healthy, fewer than a quorum", healthy, members))
		}
	}
	setBool(kcp, controlplanev1.AvailableCondition, len(why) == 0,
		controlplanev1.AvailableReason, controlplanev1.NotAvailableReason, strings.Join(why, "; "))
}

// workloadUnreachableMessage explains every condition that is Unknown because the
// workload cluster's Nodes could not be read.
const workloadUnreachableMessage = "The workload cluster's API cannot be reached, so the servers' Nodes and etcd members are unknown; " +
	"no scaling, rollout or remediation step is taken until it can"

func readyServers(o observed) int {
	ready := 0
	for _, m := range o.machines {
		if o.nodes.Ready(m.Name) {
			ready++
		}
	}
	return ready
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

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}
