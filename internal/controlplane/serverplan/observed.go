package serverplan

import (
	"sort"
	"strings"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/collections"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/workload"
)

// Observed is what a pass saw of the servers, as the scaling decision needs it.
type Observed struct {
	// Machines are the control plane's server Machines, deleting ones included.
	Machines collections.Machines
	// Nodes are the servers' Nodes by Machine name; nil when the workload cluster
	// could not be reached.
	Nodes workload.Nodes
	// UpdatingInPlace are the names of the servers being updated in place.
	UpdatingInPlace []string
	// CriticalChange says why no server may join the running ones (the spec changes a
	// setting every k3s server must share); "" when nothing holds them.
	CriticalChange string
}

// DesiredReplicas is spec.replicas, 1 when unset.
func DesiredReplicas(kcp *controlplanev1.KThreesControlPlane) int32 {
	return ptr.Deref(kcp.Spec.Replicas, 1)
}

// ExternalDatastore says whether the servers keep their data in an external
// datastore rather than embedded etcd: then no etcd quorum is at stake.
func ExternalDatastore(kcp *controlplanev1.KThreesControlPlane) bool {
	return kcp.Spec.KThreesConfigSpec.ServerConfig.Datastore != nil
}

func initialized(kcp *controlplanev1.KThreesControlPlane) bool {
	return ptr.Deref(kcp.Status.Initialization.ControlPlaneInitialized, false)
}

// list names Machines in messages in a stable order, so that a message does not
// change from one pass to the next and write the status again.
func list(names []string) string {
	sort.Strings(names)
	return strings.Join(names, ", ")
}
