package restoreplan

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// World is what a restore pass found: read fresh each pass, never remembered.
type World struct {
	// ClusterName is the restore's Cluster, for messages.
	ClusterName string
	// ClusterFound is false when the Cluster the restore names does not exist.
	ClusterFound bool
	// ClusterDeleting is true while the Cluster is being deleted.
	ClusterDeleting bool
	// Paused is true while the Cluster or its control plane is paused: the control
	// plane controller would not join servers after the restore.
	Paused bool
	// ControlPlane is the Cluster's KThreesControlPlane, nil when it has none.
	ControlPlane *controlplanev1.KThreesControlPlane
	// Remediating is true while the control plane remediates a server (between the
	// deletion of an unhealthy server and the creation of its replacement).
	Remediating bool
	// Servers are the control plane's server Machines, deleting ones included.
	Servers []Server
	// EtcdHealthy is the control plane's EtcdClusterHealthy condition: every server's
	// etcd member is there and healthy.
	EtcdHealthy bool
	// Snapshot is what is known of the snapshot to restore.
	Snapshot Snapshot
	// OldAPI is what is known of the managers' connections to the old workload API.
	OldAPI OldAPI
	// S3 is where this control plane's snapshots are, and its token's hash.
	S3 S3Target
	// Proof is k3s's snapshot list, read while the restore is Pending.
	Proof Proof
	// SafetyPrefix is the name the restore gives its safety snapshot (k3s appends
	// the node and the time).
	SafetyPrefix string
	// Lock is who holds the control plane's restore lock.
	Lock Lock
	// EndpointServer is the server Machine whose own address is the Cluster's
	// controlPlaneEndpoint host, "" when none's is.
	EndpointServer string
	// Now is when the world was read; Created when the restore was created.
	Now, Created time.Time
	// FirstServerDeadline is how long the first server has to restore; zero means
	// DefaultFirstServerDeadline.
	FirstServerDeadline time.Duration
	// WorkloadNodes are the restored workload cluster's Nodes, read once the servers
	// join; WorkloadNodesProblem says why they could not be read.
	WorkloadNodes        []WorkloadNode
	WorkloadNodesProblem string
}

// Lock is the holder of the control plane's restore lock
// (controlplanev1.EtcdRestoreLockAnnotation), resolved against the restores that
// exist: Holder is "" when the lock is free (no holder, or one that is gone,
// Succeeded or Refused).
type Lock struct {
	Holder string
	// HolderPhase is the holder's phase.
	HolderPhase controlplanev1.EtcdRestorePhase
	// HolderSnapshot and HolderSafetySnapshot are a Failed holder's proven snapshot
	// and the safety snapshot it took: what a new restore may go back to without a
	// running cluster to prove anything else on.
	HolderSnapshot, HolderSafetySnapshot string
	// TakenOver is true when the holder took the lock over from a failed restore.
	TakenOver bool
}

// WorkloadNode is one Node of the workload cluster.
type WorkloadNode struct {
	Name string
	// UID is the Node's UID: a Node deleted is this one, not one re-created under
	// its name meanwhile.
	UID string
	// Server is true for a Node k3s labelled as a server's (control-plane role, or
	// etcd role on an etcd-only server).
	Server bool
}

// OldAPI is what the restore knows of the connections Cluster API's ClusterCaches
// hold to the workload API of the old servers. A ClusterCache keeps informers on the
// workload cluster; k3s's restored etcd starts again at the snapshot's revision,
// below the revisions those informers have seen, and the apiserver sends a watch
// only the events newer than the revision it asked for: informers that live across
// the restore never see the restored cluster's new objects (the first server's Node
// among them). A ClusterCache drops its connection (and caches) only after its
// health probe failed several times in a row, so the first server is created only
// once the old API has been gone long enough for that.
type OldAPI struct {
	// Probe is the status of Cluster API's RemoteConnectionProbe condition on the
	// Cluster, "" while the Cluster has no such condition.
	Probe metav1.ConditionStatus
	// ProbeSince is when that condition last changed status.
	ProbeSince time.Time
	// Now is when the condition was read.
	Now time.Time
	// CacheConnected is true while this manager's own ClusterCache still holds a
	// connection to the workload cluster. That covers only this manager's caches:
	// CAPI core's ClusterCache runs in another process and probes on its own clock,
	// so only its RemoteConnectionProbe condition says when CAPI core has let go.
	CacheConnected bool
}

// Cluster API v1.14.2's defaults for its ClusterCache's health probe
// (controllers/clustercache/cluster_cache.go, SetupWithManager) and for the Cluster
// controller's --remote-connection-grace-period (main.go).
const (
	capiProbeInterval         = 10 * time.Second
	capiProbeTimeout          = 5 * time.Second
	capiProbeFailureThreshold = 5
	capiProbeGracePeriod      = 50 * time.Second
	// probeMarginSlack covers a busy work queue running a probe late and the Cluster
	// controller writing the condition late: one more probe.
	probeMarginSlack = capiProbeInterval + capiProbeTimeout
)

// ProbeFailedMargin is how long Cluster API's RemoteConnectionProbe must have been
// False before the first server is created, so that CAPI core's ClusterCache has
// dropped its connection (and informers) to the old workload API by then.
//
// CAPI records a probe's time after the request returned
// (controllers/clustercache/cluster_accessor.go, HealthCheck) and runs the next one a
// full interval after that (cluster_cache.go, Reconcile). With an endpoint that does
// not answer, every failed probe takes interval + timeout = 15s, so counted from the
// last success L the connection is dropped after threshold failures, at about
// L + 5 x 15s = L + 75s (sooner when the endpoint refuses at once). The condition goes
// False once L is older than the grace period: at L + 50s at the earliest. The
// margin is 75s - 50s = 25s, plus 15s of slack: 40s.
const ProbeFailedMargin = capiProbeFailureThreshold*(capiProbeInterval+capiProbeTimeout) -
	capiProbeGracePeriod + probeMarginSlack

// released says why the first server must wait for the old API's connections to be
// dropped, "" when it need not. The reason names the case and the times it is
// counted from, never an elapsed time: it goes into the restore's status, which must
// not change while nothing else does.
func (o OldAPI) released() string {
	const probe = "Cluster API's RemoteConnectionProbe on the Cluster"
	switch {
	case o.CacheConnected:
		return "this manager's ClusterCache is still connected to the old workload API"
	case o.Probe == "":
		return fmt.Sprintf("%s is missing; the first server waits until it has been False for %s", probe, ProbeFailedMargin)
	case o.Probe != metav1.ConditionFalse:
		return fmt.Sprintf("%s has been %s since %s; the first server waits until it has been False for %s",
			probe, o.Probe, stamp(o.ProbeSince), ProbeFailedMargin)
	case o.Now.Sub(o.ProbeSince) < ProbeFailedMargin:
		return fmt.Sprintf("%s has been False since %s; the first server waits until it has been False for %s, at %s",
			probe, stamp(o.ProbeSince), ProbeFailedMargin, stamp(o.ProbeSince.Add(ProbeFailedMargin)))
	}
	return ""
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Server is one server Machine.
type Server struct {
	Name string
	// Created is when the Machine was created.
	Created time.Time
	// Deleting is true once the Machine has a deletion timestamp.
	Deleting bool
	// RestoreOf is the name of the restore that created it (the Machine's
	// EtcdRestoreAnnotation), "" for every other server.
	RestoreOf string
	// Ready is the Machine's Ready condition.
	Ready bool
	// HasNode is true once the Machine has found its Node in the workload API.
	HasNode bool
	// Outdated is true when the control plane marked the Machine not up to date.
	Outdated bool
	// UpdatingInPlace is true while the server is being updated in place.
	UpdatingInPlace bool
	// MarkedForRemediation is true when a MachineHealthCheck found it unhealthy.
	MarkedForRemediation bool
	// NodeName is the Machine's Node (its nodeRef), "" before it has one.
	NodeName string
	// Status says, for messages, why the Machine is not Ready yet.
	Status string
}

// Snapshot is what the restore knows of its snapshot: a name, or why not (yet).
type Snapshot struct {
	// Name is the snapshot's name in the cluster's S3 folder.
	Name string
	// Wait says why the name is not known yet, when it may still become known (a
	// referenced KThreesEtcdSnapshot still running).
	Wait string
	// Problem says why there is no snapshot to restore (a reference to nothing, a
	// failed snapshot, one that is not in S3).
	Problem string
	// KnownSince is when the name became known, when that was after the restore's
	// creation (a referenced KThreesEtcdSnapshot's completion); zero otherwise. The
	// wait for k3s to answer the proof's list counts from the later of the two.
	KnownSince time.Time
}

func (w World) specificServers(keep func(Server) bool) []Server {
	var out []Server
	for _, s := range w.Servers {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

func names(servers []Server) []string {
	out := make([]string, 0, len(servers))
	for _, s := range servers {
		out = append(out, s.Name)
	}
	return out
}
