package restoreplan

import (
	"fmt"
	"strings"

	"k8s.io/utils/ptr"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

func decidePending(restore string, d Decision, w World) Decision {
	refuse := func(why string) Decision {
		d.Phase, d.Message = controlplanev1.EtcdRestoreRefused, "refused, nothing was changed: "+why
		return d
	}
	l := w.Lock
	takeover := l.Holder != "" && l.Holder != restore && l.HolderPhase == controlplanev1.EtcdRestoreFailed
	tookOver := l.Holder == restore && l.TakenOver
	if l.Holder != "" && l.Holder != restore && !takeover {
		return refuse(fmt.Sprintf("KThreesEtcdRestore %s holds this control plane (phase %s): one restore of a cluster at a time", l.Holder, orPending(l.HolderPhase)))
	}
	if why := refusal(w, takeover || tookOver); why != "" {
		return refuse(why)
	}
	if w.EndpointServer != "" && !takeover && !tookOver {
		return refuse(fmt.Sprintf("the Cluster's controlPlaneEndpoint is the own address of server %s, which the restore deletes: "+
			"no new server could be reached there; give the Cluster an endpoint that outlives its servers (a load balancer or a virtual IP)", w.EndpointServer))
	}
	s := w.Snapshot
	switch {
	case s.Problem != "":
		return refuse(s.Problem)
	case s.Name == "":
		d.Message = "waiting for the snapshot: " + s.Wait
		return d
	}
	d.Snapshot = s.Name
	if tookOver {
		// Proved against the failed restore's record when the lock was taken.
		d.Phase = controlplanev1.EtcdRestoreDeletingServers
		d.Message = fmt.Sprintf("restoring snapshot %s after a failed restore (no new safety snapshot: no server runs%s): deleting what is left of the servers",
			d.Snapshot, keptSafety(d.SafetySnapshot))
		return d
	}
	if takeover {
		return decideTakeover(d, w)
	}
	since := w.Created
	if s.KnownSince.After(since) {
		// A restore that waited for its KThreesEtcdSnapshot gets the whole wait for
		// k3s's answer from when it could first ask.
		since = s.KnownSince
	}
	wait, problem := prove(s.Name, w.S3, w.Proof, w.ClusterName, since, w.Now)
	switch {
	case problem != "":
		return refuse(problem)
	case wait != "":
		d.Snapshot = ""
		d.Message = wait
		return d
	}
	proven := fmt.Sprintf("snapshot %s proven in bucket %q, folder %q", s.Name, w.S3.Bucket, w.S3.Folder)
	if l.Holder != restore {
		d.TakeLock = true
		d.Message = proven + "; taking the control plane's restore lock"
		return d
	}
	if !strings.HasPrefix(d.SafetySnapshot, w.SafetyPrefix+"-") {
		// Only a safety snapshot this restore took saves the running cluster: one
		// carried from a takeover that did not happen (the lock freed meanwhile) is not.
		if d.SafetySnapshot = FindSafety(w); d.SafetySnapshot == "" {
			d.TakeSafetySnapshot = true
			d.Message = fmt.Sprintf("%s; taking a safety snapshot %s of the running cluster to S3 before anything is deleted", proven, w.SafetyPrefix)
			return d
		}
	}
	d.Phase = controlplanev1.EtcdRestoreDeletingServers
	d.Message = fmt.Sprintf("restoring snapshot %s (safety snapshot %s taken): deleting the old servers", s.Name, d.SafetySnapshot)
	return d
}

// decideTakeover starts a restore of a cluster whose servers a failed restore
// deleted: nothing runs to prove a snapshot on, so only the snapshots that restore
// proved or took itself, while the old servers ran, may be restored; no safety
// snapshot is taken, there is no cluster to save. The failed restore's safety
// snapshot is carried into this one's status (status.safetySnapshot): it is the
// cluster as it was before the first of the failed restores, and if this restore
// fails too, its way out must still offer it, and a restore that takes over from
// this one must still accept it.
func decideTakeover(d Decision, w World) Decision {
	l := w.Lock
	if d.Snapshot != l.HolderSnapshot && d.Snapshot != l.HolderSafetySnapshot {
		d.Phase = controlplanev1.EtcdRestoreRefused
		d.Message = fmt.Sprintf("refused, nothing was changed: KThreesEtcdRestore %s failed after it deleted the servers, so no server runs to prove snapshot %s on; "+
			"a restore that takes over may only restore what that restore proved or took before it deleted anything: %s",
			l.Holder, d.Snapshot, list(nonEmpty(l.HolderSafetySnapshot, l.HolderSnapshot)))
		return d
	}
	d.TakeLock, d.TakeOver = true, true
	d.SafetySnapshot = l.HolderSafetySnapshot
	d.Message = fmt.Sprintf("taking over the control plane from the failed KThreesEtcdRestore %s to restore snapshot %s", l.Holder, d.Snapshot)
	return d
}

// keptSafety names, for messages, the safety snapshot a takeover carried from the
// failed restore.
func keptSafety(safety string) string {
	if safety == "" {
		return ""
	}
	return "; the safety snapshot " + safety + " of the cluster before the failed restore is kept"
}

func nonEmpty(s ...string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

func orPending(p controlplanev1.EtcdRestorePhase) controlplanev1.EtcdRestorePhase {
	if p == "" {
		return controlplanev1.EtcdRestorePending
	}
	return p
}

// Refusal says why a restore may not start on this world, before its snapshot is
// proven: the controller does not ask k3s for a list it would not use.
func Refusal(w World) string {
	return refusal(w, false)
}

// refusal says why a restore may not start now, "" when it may. Everything it
// checks would otherwise fight the restore over the servers, or make it pointless.
//
// A takeover (a new restore after a failed one) is not refused for the state of
// the servers: the failed restore left them as they are.
func refusal(w World, takeover bool) string {
	if !w.ClusterFound {
		return "the Cluster does not exist"
	}
	kcp := w.ControlPlane
	if kcp == nil {
		return "the Cluster has no KThreesControlPlane"
	}
	if why := unsupported(kcp); why != "" {
		return why
	}
	if w.ClusterDeleting || !kcp.DeletionTimestamp.IsZero() {
		return "the cluster is being deleted"
	}
	if w.Paused {
		return "the Cluster or its KThreesControlPlane is paused"
	}
	if !ptr.Deref(kcp.Status.Initialization.ControlPlaneInitialized, false) {
		return "the control plane was never initialized; a new cluster restores with kthreesConfigSpec.serverConfig.etcd.restoreFrom"
	}
	if takeover {
		return ""
	}
	if w.Remediating {
		return "a remediation of the control plane is in progress"
	}
	if s := names(w.specificServers(func(s Server) bool { return s.Deleting })); len(s) > 0 {
		return "servers are being deleted (a rollout, scale-down or remediation runs): " + list(s)
	}
	if s := names(w.specificServers(func(s Server) bool { return s.UpdatingInPlace })); len(s) > 0 {
		return "servers are being updated in place: " + list(s)
	}
	if s := names(w.specificServers(func(s Server) bool { return s.MarkedForRemediation })); len(s) > 0 {
		return "servers are marked for remediation: " + list(s)
	}
	if s := names(w.specificServers(func(s Server) bool { return s.Outdated })); len(s) > 0 {
		return "a rollout is in progress, servers need replacing: " + list(s)
	}
	if want := ptr.Deref(kcp.Spec.Replicas, 1); int(want) != len(w.Servers) {
		return fmt.Sprintf("the control plane is scaling: %d servers, %d wanted", len(w.Servers), want)
	}
	return ""
}

// unsupported says why a control plane cannot be restored this way at all.
func unsupported(kcp *controlplanev1.KThreesControlPlane) string {
	sc := kcp.Spec.KThreesConfigSpec.ServerConfig
	if sc.Datastore != nil {
		return "the control plane runs on an external datastore (serverConfig.datastore), not embedded etcd: restore the datastore instead"
	}
	if sc.Etcd == nil || sc.Etcd.Snapshots == nil || sc.Etcd.Snapshots.S3 == nil {
		return "kthreesConfigSpec.serverConfig.etcd.snapshots.s3 is not set: a new server can only read a snapshot from S3"
	}
	return ""
}
