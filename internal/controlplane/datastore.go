package controlplane

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/serverplan"
)

// With an external datastore (spec.kthreesConfigSpec.serverConfig.datastore) the
// servers are stateless API servers in front of it: there is no etcd membership to
// hand over when one goes (no pre-terminate hook, no remove annotation), and no
// quorum for scaling, rollouts or remediation to protect. The webhook keeps a control
// plane from switching between the two, so a control plane is one or the other for
// its whole life.

// Reasons of the DatastoreAvailable condition.
const (
	datastoreAvailableReason    = "Available"
	datastoreNotAvailableReason = "NotAvailable"
	datastoreUnknownReason      = "Unknown"
)

func externalDatastore(kcp *controlplanev1.KThreesControlPlane) bool {
	return serverplan.ExternalDatastore(kcp)
}

// setDatastoreHealth reports on whichever datastore the servers use and removes the
// other's condition.
func setDatastoreHealth(kcp *controlplanev1.KThreesControlPlane, seen observed) {
	if !externalDatastore(kcp) {
		conditions.Delete(kcp, controlplanev1.DatastoreAvailableCondition)
		setEtcdHealth(kcp, seen)
		return
	}
	conditions.Delete(kcp, controlplanev1.EtcdClusterHealthyCondition)
	setDatastoreAvailable(kcp, seen)
}

// setDatastoreAvailable derives DatastoreAvailable from the workload cluster, since
// the control plane has no connection to the datastore (its endpoint is a secret the
// bootstrap side reads, and the datastore may be reachable from the servers only).
// A k3s server's API serves reads and writes only through its datastore, and a
// server's Node stays Ready only while its kubelet's status updates are written, so
// a Ready server Node is evidence that the datastore served recently. True: the
// Nodes were read and at least one server's Node is Ready. False: no server's Node is
// Ready (the datastore, or every server, is down). Unknown: the Nodes could not be
// read. It lags an outage by the node-monitor grace period, and cannot tell a
// datastore outage from an outage of every server; monitor the datastore itself.
func setDatastoreAvailable(kcp *controlplanev1.KThreesControlPlane, seen observed) {
	c := metav1.Condition{Type: controlplanev1.DatastoreAvailableCondition}
	ready := readyServers(seen)
	switch {
	case seen.unreachable():
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, controlplanev1.WorkloadClusterUnreachableReason, workloadUnreachableMessage
	case seen.nodes == nil:
		c.Status, c.Reason = metav1.ConditionUnknown, datastoreUnknownReason
		c.Message = "The servers' Nodes were not read from the workload cluster (not reached yet)"
	case ready == 0:
		c.Status, c.Reason = metav1.ConditionFalse, datastoreNotAvailableReason
		c.Message = "No server's Node is Ready, so nothing shows that the external datastore serves the cluster"
	default:
		c.Status, c.Reason = metav1.ConditionTrue, datastoreAvailableReason
	}
	conditions.Set(kcp, c)
}
