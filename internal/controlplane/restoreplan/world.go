package restoreplan

import (
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// World is what a restore pass found: read fresh each pass, never remembered.
type World struct {
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
}

// Server is one server Machine.
type Server struct {
	Name string
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
