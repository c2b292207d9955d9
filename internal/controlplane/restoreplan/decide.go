package restoreplan

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// Decision is what a restore does in this pass. The controller writes Phase,
// Message and Snapshot (with the conditions Conditions gives) before it acts, and
// acts only on what the written phase allows.
type Decision struct {
	Phase   controlplanev1.EtcdRestorePhase
	Message string
	// Snapshot is the snapshot name to record (fixed once the restore started).
	Snapshot string
	// FirstServer is the restore's own server, once it exists.
	FirstServer string
	// Delete are the old servers to remove: each is deleted (if it is not already)
	// with nothing in its deletion waiting on the workload API.
	Delete []string
	// CreateFirstServer asks for the server that restores the snapshot.
	CreateFirstServer bool
	// OldServerNodes are the names of the old servers' Nodes the restore deleted in
	// the workload cluster (status.oldServerNodes), DeleteNodes among them: recorded
	// before they are deleted.
	OldServerNodes []string
	// DeleteNodes are Nodes to delete in the workload cluster: servers' Nodes the
	// snapshot brought back that no current server has.
	DeleteNodes []WorkloadNode
	// SafetySnapshot is the safety snapshot to record (status.safetySnapshot).
	SafetySnapshot string
	// TakeLock asks to write the control plane's restore lock for this restore
	// (with an optimistic lock), and to add the restore's finalizer.
	TakeLock bool
	// TakeOver marks the lock taken as a takeover from a failed restore.
	TakeOver bool
	// TakeSafetySnapshot asks for a snapshot of the running cluster to S3, named
	// with World.SafetyPrefix.
	TakeSafetySnapshot bool
	// Poll asks for another pass soon: the restore waits on something no watch
	// announces (Cluster API's connection to the old workload API going away, the
	// workload cluster's Nodes).
	Poll bool
}

// Decide is the restore's next step, from its recorded status and the world.
// restore is the restore's name (the mark on its own server).
func Decide(restore string, status controlplanev1.KThreesEtcdRestoreStatus, w World) Decision {
	phase := status.Phase
	if phase == "" {
		phase = controlplanev1.EtcdRestorePending
	}
	keep := Decision{Phase: phase, Message: status.Message, Snapshot: status.SnapshotName, FirstServer: status.FirstServer,
		OldServerNodes: status.OldServerNodes, SafetySnapshot: status.SafetySnapshot}
	if phase.Finished() {
		return keep
	}
	if phase == controlplanev1.EtcdRestorePending {
		return decidePending(restore, keep, w)
	}
	if gone := controlPlaneGone(w); gone != "" {
		keep.Phase, keep.Message = controlplanev1.EtcdRestoreFailed, gone
		return keep
	}
	if w.Paused {
		// As every Cluster API controller: nothing is done for a paused cluster, and
		// the restore goes on where it stood once it is unpaused.
		keep.Message = "paused with the Cluster or its KThreesControlPlane; " + keep.Message
		if strings.HasPrefix(status.Message, "paused with") {
			keep.Message = status.Message
		}
		return keep
	}
	if late := firstServerNeverCreated(restore, status, w); late != "" {
		keep.Phase = controlplanev1.EtcdRestoreFailed
		keep.Message = fmt.Sprintf("the restore of snapshot %s has no first server %s (last step: %s); the cluster may have no working server. %s",
			keep.Snapshot, late, status.Message, wayOut(keep))
		return keep
	}
	switch phase {
	case controlplanev1.EtcdRestoreDeletingServers:
		return decideDeleting(restore, keep, w)
	case controlplanev1.EtcdRestoreRestoringFirstServer:
		return decideFirstServer(restore, keep, w)
	default:
		return decideJoining(keep, w)
	}
}

// controlPlaneGone says why a started restore cannot go on: what it restores is gone.
func controlPlaneGone(w World) string {
	switch {
	case !w.ClusterFound || w.ControlPlane == nil:
		return "the Cluster or its KThreesControlPlane was deleted during the restore"
	case w.ClusterDeleting || !w.ControlPlane.DeletionTimestamp.IsZero():
		return "the Cluster is being deleted: the restore stopped"
	}
	return ""
}

func decideDeleting(restore string, d Decision, w World) Decision {
	old := w.specificServers(func(s Server) bool { return s.RestoreOf != restore })
	if len(old) > 0 {
		d.Delete = names(old)
		d.Message = fmt.Sprintf("restoring snapshot %s: deleting the old servers %s; the workload API is down until the first server has restored", d.Snapshot, list(d.Delete))
		return d
	}
	d.Phase = controlplanev1.EtcdRestoreRestoringFirstServer
	d.Message = fmt.Sprintf("restoring snapshot %s: creating the first server", d.Snapshot)
	return d
}

func decideFirstServer(restore string, d Decision, w World) Decision {
	// A server the control plane made before it saw this restore is old too.
	if old := w.specificServers(func(s Server) bool { return s.RestoreOf != restore }); len(old) > 0 {
		d.Delete = names(old)
		d.Message = fmt.Sprintf("restoring snapshot %s: deleting servers that are not the restore's: %s", d.Snapshot, list(d.Delete))
		return d
	}
	if why := unsupported(w.ControlPlane); why != "" {
		d.Message = "held before creating the first server: " + why
		return d
	}
	own := w.specificServers(func(s Server) bool { return !s.Deleting })
	if len(own) == 0 {
		if deleting := names(w.Servers); len(deleting) > 0 {
			d.Message = "waiting for the deleted first server to be gone before creating another: " + list(deleting)
			return d
		}
		if why := w.OldAPI.released(); why != "" {
			d.Poll = true
			d.Message = fmt.Sprintf("restoring snapshot %s: the first server is held until Cluster API has dropped its caches of the old workload API, which would never see the restored cluster: %s", d.Snapshot, why)
			return d
		}
		d.CreateFirstServer = true
		d.Message = fmt.Sprintf("restoring snapshot %s: creating the first server", d.Snapshot)
		return d
	}
	first := own[0]
	d.FirstServer = first.Name
	if first.Ready && first.HasNode {
		d.Phase = controlplanev1.EtcdRestoreJoiningServers
		d.Message = fmt.Sprintf("snapshot %s restored on %s; the control plane joins the other servers", d.Snapshot, first.Name)
		return d
	}
	if late := firstServerLate(w, first); late != "" {
		d.Phase = controlplanev1.EtcdRestoreFailed
		d.Message = fmt.Sprintf("the first server %s did not restore snapshot %s %s (%s); the cluster has no working server. %s",
			first.Name, d.Snapshot, late, orNone(first.Status), wayOut(d))
		return d
	}
	d.Message = fmt.Sprintf("restoring snapshot %s on the first server %s", d.Snapshot, first.Name)
	if first.Status != "" {
		d.Message += ": " + first.Status
	}
	return d
}

// DefaultFirstServerDeadline is how long the first server has to restore the
// snapshot, from its Machine's creation: a machine to provision, k3s to download
// the snapshot and reset etcd, and its Node to come up, with room to spare. The
// wait for Cluster API's caches before it is created is the restore's own and does
// not count.
const DefaultFirstServerDeadline = 20 * time.Minute

// firstServerDeadline is w's deadline, the default when it has none.
func (w World) firstServerDeadline() time.Duration {
	if w.FirstServerDeadline <= 0 {
		return DefaultFirstServerDeadline
	}
	return w.FirstServerDeadline
}

// FirstServerDue is when a first server created at created must have restored.
func (w World) FirstServerDue(created time.Time) time.Time {
	return created.Add(w.firstServerDeadline())
}

// StartDue is when a restore started at start must have a first server of its own:
// room to delete the old servers and to wait for Cluster API to give the old
// workload API up (its grace period and ProbeFailedMargin), plus as long again as
// the first-server deadline. Without it a restore could wait for ever with no
// server (snapshots.s3 removed meanwhile, a probe that never goes False, a server
// stuck deleting), neither Failed, so not to be taken over, nor to be deleted.
func (w World) StartDue(start time.Time) time.Time {
	return start.Add(2*w.firstServerDeadline() + capiProbeGracePeriod + ProbeFailedMargin)
}

// firstServerNeverCreated says how late a restore that deletes servers or waits to
// create its first one is, "" while it is in time or once its first server exists
// (which then has its own deadline).
func firstServerNeverCreated(restore string, status controlplanev1.KThreesEtcdRestoreStatus, w World) string {
	if status.StartTime == nil || !Holds(status.Phase) {
		return ""
	}
	own := w.specificServers(func(s Server) bool { return s.RestoreOf == restore && !s.Deleting })
	if status.Phase == controlplanev1.EtcdRestoreRestoringFirstServer && len(own) > 0 {
		return ""
	}
	start := status.StartTime.Time
	if w.Now.Before(w.StartDue(start)) {
		return ""
	}
	return fmt.Sprintf("within %s of its start at %s", w.StartDue(start).Sub(start), stamp(start))
}

// firstServerLate says how late the first server is, "" while it is in time.
func firstServerLate(w World, first Server) string {
	if first.Created.IsZero() || w.Now.Before(w.FirstServerDue(first.Created)) {
		return ""
	}
	return fmt.Sprintf("within %s of its creation at %s", w.firstServerDeadline(), stamp(first.Created))
}

// wayOut tells a user what to do once a restore failed after it deleted servers.
func wayOut(d Decision) string {
	back := d.Snapshot
	if d.SafetySnapshot != "" && d.SafetySnapshot != d.Snapshot {
		// After a takeover, the safety snapshot is the one the first failed restore
		// took: the cluster as it was before any of them.
		back = d.SafetySnapshot + " (the cluster as it was before the restore that took it) or " + d.Snapshot
	}
	return fmt.Sprintf("Way out: create a new KThreesEtcdRestore of this cluster with spec.snapshotName %s; it takes over from this one "+
		"(keep this restore until then: it holds the control plane, which would otherwise join servers to a cluster that has none); see docs/etcd-snapshots.md", back)
}

func decideJoining(d Decision, w World) Decision {
	want := int(ptr.Deref(w.ControlPlane.Spec.Replicas, 1))
	live := w.specificServers(func(s Server) bool { return !s.Deleting })
	ready := w.specificServers(func(s Server) bool { return !s.Deleting && s.Ready && s.HasNode })
	deleting := len(w.Servers) - len(live)
	if len(live) == want && len(ready) == want && deleting == 0 && w.EtcdHealthy {
		if w.WorkloadNodesProblem != "" {
			d.Poll = true
			d.Message = fmt.Sprintf("snapshot %s restored, %d servers Ready; reading the workload cluster's Nodes: %s", d.Snapshot, want, w.WorkloadNodesProblem)
			return d
		}
		if d.DeleteNodes = strayServerNodes(w); len(d.DeleteNodes) > 0 {
			deleting := make([]string, 0, len(d.DeleteNodes))
			for _, n := range d.DeleteNodes {
				deleting = append(deleting, n.Name)
			}
			d.OldServerNodes = sets.List(sets.New(d.OldServerNodes...).Insert(deleting...))
			d.Poll = true
			d.Message = fmt.Sprintf("snapshot %s restored, %d servers Ready; deleting the old servers' Nodes the snapshot brought back: %s", d.Snapshot, want, list(deleting))
			return d
		}
		d.Phase = controlplanev1.EtcdRestoreSucceeded
		d.Message = fmt.Sprintf("snapshot %s restored: %d servers Ready, etcd healthy", d.Snapshot, want)
		return d
	}
	d.Message = fmt.Sprintf("snapshot %s restored on %s; joining servers: %d of %d Ready", d.Snapshot, d.FirstServer, len(ready), want)
	if deleting > 0 {
		d.Message += fmt.Sprintf(", %d being deleted", deleting)
	}
	if !w.EtcdHealthy {
		d.Message += ", etcd not healthy yet"
	}
	return d
}

// strayServerNodes are the servers' Nodes in the workload cluster that no current
// server Machine has: the Nodes of the servers that ran when the snapshot was taken,
// which the restored etcd brings back and no kubelet will ever update. Which servers
// those were is not known here (a rollout may have replaced them all since), so the
// rule is by role: every Node k3s labelled as a server's and no server Machine's now.
// It is asked only once every current server is Ready with its Node, so that none of
// theirs is taken for a stray one. An agent's Node never has a server role and is
// never among them.
func strayServerNodes(w World) []WorkloadNode {
	current := sets.New[string]()
	for _, s := range w.Servers {
		current.Insert(s.NodeName)
	}
	var out []WorkloadNode
	for _, n := range w.WorkloadNodes {
		if n.Server && !current.Has(n.Name) {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func list(s []string) string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return strings.Join(s, ", ")
}
