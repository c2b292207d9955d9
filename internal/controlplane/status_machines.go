package controlplane

import (
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
)

// The control plane's machine conditions aggregate the Machines' own conditions with
// CAPI's aggregation, so that their messages read like those of CAPI's MachineSets
// and KCP (each Machine's reason, grouped).

// setMachinesReady aggregates the servers' Ready conditions (set by CAPI's Machine
// controller from the Node, the infrastructure, the bootstrap data and the readiness
// gates).
func setMachinesReady(kcp *controlplanev1.KThreesControlPlane, machines collections.Machines) {
	aggregateMachineCondition(kcp, machines, clusterv1.MachineReadyCondition, controlplanev1.MachinesReadyCondition,
		controlplanev1.NotReadyReason, controlplanev1.ReadyUnknownReason, controlplanev1.ReadyReason)
}

// newMachineGrace is how long a new Machine may lack the UpToDate condition before
// it counts as Unknown: this controller sets it on the pass after the create, and a
// condition that flickers to Unknown for every new server would only be noise.
const newMachineGrace = 10 * time.Second

// setMachinesUpToDate aggregates the servers' UpToDate conditions, which this
// controller sets (machine_uptodate.go).
func setMachinesUpToDate(kcp *controlplanev1.KThreesControlPlane, machines collections.Machines, now time.Time) {
	machines = machines.Filter(func(m *clusterv1.Machine) bool {
		return conditions.Has(m, clusterv1.MachineUpToDateCondition) || now.Sub(m.CreationTimestamp.Time) > newMachineGrace
	})
	aggregateMachineCondition(kcp, machines, clusterv1.MachineUpToDateCondition, controlplanev1.MachinesUpToDateCondition,
		controlplanev1.NotUpToDateReason, controlplanev1.UpToDateUnknownReason, controlplanev1.UpToDateReason)
}

func aggregateMachineCondition(kcp *controlplanev1.KThreesControlPlane, machines collections.Machines, source, target, falseReason, unknownReason, trueReason string) {
	if machines.Len() == 0 {
		conditions.Set(kcp, metav1.Condition{Type: target, Status: metav1.ConditionTrue, Reason: controlplanev1.NoReplicasReason})
		return
	}
	c, err := conditions.NewAggregateCondition(machines.UnsortedList(), source,
		conditions.TargetConditionType(target),
		conditions.CustomMergeStrategy{MergeStrategy: conditions.DefaultMergeStrategy(
			conditions.ComputeReasonFunc(conditions.GetDefaultComputeMergeReasonFunc(falseReason, unknownReason, trueReason)),
		)},
	)
	if err != nil {
		// Only reachable with an invalid source type, which is a constant here.
		conditions.Set(kcp, metav1.Condition{
			Type: target, Status: metav1.ConditionUnknown, Reason: controlplanev1.InternalErrorReason,
			Message: "Aggregating the Machines' " + source + " conditions failed: " + err.Error(),
		})
		return
	}
	conditions.Set(kcp, *c)
}

// versionsOf is the contract's status.versions: each k3s version the servers run
// with its number of servers, oldest first. A server runs what its Node reports once
// CAPI has copied it to the Machine, else what its Machine asks for. k3s releases of
// one Kubernetes version differ in the build ("+k3s1" < "+k3s2"), which CAPI's
// version comparison cannot order, and CAPI's own aggregation for KCP is internal:
// hence this one.
func versionsOf(machines collections.Machines) []clusterv1.StatusVersion {
	counts := map[string]int32{}
	for _, m := range machines {
		v := m.Spec.Version
		if m.Status.NodeInfo != nil && m.Status.NodeInfo.KubeletVersion != "" {
			v = m.Status.NodeInfo.KubeletVersion
		}
		if v != "" {
			counts[v]++
		}
	}
	if len(counts) == 0 {
		return nil
	}
	out := make([]clusterv1.StatusVersion, 0, len(counts))
	for v, n := range counts {
		out = append(out, clusterv1.StatusVersion{Version: v, Replicas: n})
	}
	sort.Slice(out, func(i, j int) bool { return versionLess(out[i].Version, out[j].Version) })
	return out
}

// versionLess orders k3s versions, build included; a version that does not parse
// goes after every one that does, and ties break by spelling so the order is stable.
func versionLess(a, b string) bool {
	va, errA := k3s.ParseVersion(a)
	vb, errB := k3s.ParseVersion(b)
	switch {
	case errA == nil && errB == nil:
		if c := k3s.CompareVersions(va, vb); c != 0 {
			return c < 0
		}
	case errA == nil:
		return true
	case errB == nil:
		return false
	}
	return a < b
}
