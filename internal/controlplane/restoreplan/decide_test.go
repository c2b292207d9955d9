package restoreplan

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

const me = "restore-1"

// t0 is when Cluster API's RemoteConnectionProbe went False in these tests.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func s3ControlPlane(replicas int32) *controlplanev1.KThreesControlPlane {
	kcp := &controlplanev1.KThreesControlPlane{}
	kcp.Spec.Replicas = ptr.To(replicas)
	kcp.Spec.KThreesConfigSpec.ServerConfig.Etcd = &bootstrapv1.Etcd{Snapshots: &bootstrapv1.EtcdSnapshots{
		S3: &bootstrapv1.EtcdSnapshotsS3{Bucket: "b"}}}
	kcp.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	return kcp
}

func ready(name string) Server { return Server{Name: name, Ready: true, HasNode: true} }

// healthy is a running 3-server cluster with its snapshot known and proven by
// k3s's list, the lock taken by this restore and its safety snapshot in S3.
func healthy() World {
	return World{ClusterFound: true, ClusterName: "c1", ControlPlane: s3ControlPlane(3), EtcdHealthy: true,
		Servers:  []Server{ready("a"), ready("b"), ready("c")},
		Snapshot: Snapshot{Name: "etcd-snapshot-a-1700000000"},
		S3:       S3Target{Bucket: "b", Folder: "c1", TokenHash: "h1"},
		Proof: Proof{Items: []Listed{
			{Name: "etcd-snapshot-a-1700000000", Location: "s3://b/c1/etcd-snapshot-a-1700000000", Ready: true, TokenHash: "h1"},
			{Name: "pre-restore-1-a-1700000900", Location: "s3://b/c1/pre-restore-1-a-1700000900", Ready: true, TokenHash: "h1"},
		}},
		SafetyPrefix: "pre-restore-1",
		Lock:         Lock{Holder: me, HolderPhase: controlplanev1.EtcdRestorePending},
		Now:          t0, Created: t0,
	}
}

func with(w World, f func(*World)) World { f(&w); return w }

func at(phase controlplanev1.EtcdRestorePhase) controlplanev1.KThreesEtcdRestoreStatus {
	s := controlplanev1.KThreesEtcdRestoreStatus{Phase: phase}
	if phase != "" && phase != controlplanev1.EtcdRestorePending {
		s.SnapshotName = "etcd-snapshot-a-1700000000"
	}
	return s
}

func TestDecide(t *testing.T) {
	cases := []struct {
		name     string
		status   controlplanev1.KThreesEtcdRestoreStatus
		world    World
		phase    controlplanev1.EtcdRestorePhase
		delete   []string
		create   bool
		message  string // a part of the message
		snapshot string
	}{
		// Pending: preconditions and refusals. A refused restore changes nothing.
		{name: "starts on a healthy cluster", status: at(""), world: healthy(),
			phase: controlplanev1.EtcdRestoreDeletingServers, snapshot: "etcd-snapshot-a-1700000000", message: "deleting the old servers"},
		{name: "waits for a referenced snapshot still running", status: at(""),
			world: with(healthy(), func(w *World) { w.Snapshot = Snapshot{Wait: "snapshot s1 is Running"} }),
			phase: controlplanev1.EtcdRestorePending, message: "snapshot s1 is Running"},
		{name: "refuses a snapshot that is not in S3", status: at(""),
			world: with(healthy(), func(w *World) { w.Snapshot = Snapshot{Problem: "snapshot s1 is on a server's disk, not in S3"} }),
			phase: controlplanev1.EtcdRestoreRefused, message: "not in S3"},
		{name: "refuses without a Cluster", status: at(""), world: World{},
			phase: controlplanev1.EtcdRestoreRefused, message: "Cluster does not exist"},
		{name: "refuses without a control plane", status: at(""), world: World{ClusterFound: true},
			phase: controlplanev1.EtcdRestoreRefused, message: "no KThreesControlPlane"},
		{name: "refuses an external datastore", status: at(""),
			world: with(healthy(), func(w *World) {
				w.ControlPlane.Spec.KThreesConfigSpec.ServerConfig.Datastore = &bootstrapv1.Datastore{}
			}),
			phase: controlplanev1.EtcdRestoreRefused, message: "external datastore"},
		{name: "refuses without S3", status: at(""),
			world: with(healthy(), func(w *World) { w.ControlPlane.Spec.KThreesConfigSpec.ServerConfig.Etcd.Snapshots.S3 = nil }),
			phase: controlplanev1.EtcdRestoreRefused, message: "snapshots.s3 is not set"},
		{name: "refuses while the cluster is deleted", status: at(""),
			world: with(healthy(), func(w *World) { w.ClusterDeleting = true }),
			phase: controlplanev1.EtcdRestoreRefused, message: "being deleted"},
		{name: "refuses while paused", status: at(""),
			world: with(healthy(), func(w *World) { w.Paused = true }),
			phase: controlplanev1.EtcdRestoreRefused, message: "paused"},
		{name: "refuses an uninitialized control plane", status: at(""),
			world: with(healthy(), func(w *World) { w.ControlPlane.Status.Initialization.ControlPlaneInitialized = nil }),
			phase: controlplanev1.EtcdRestoreRefused, message: "never initialized"},
		{name: "refuses during a remediation", status: at(""),
			world: with(healthy(), func(w *World) { w.Remediating = true }),
			phase: controlplanev1.EtcdRestoreRefused, message: "remediation"},
		{name: "refuses while a server is deleted", status: at(""),
			world: with(healthy(), func(w *World) { w.Servers[1].Deleting = true }),
			phase: controlplanev1.EtcdRestoreRefused, message: "being deleted (a rollout, scale-down or remediation runs): b"},
		{name: "refuses during an in-place update", status: at(""),
			world: with(healthy(), func(w *World) { w.Servers[2].UpdatingInPlace = true }),
			phase: controlplanev1.EtcdRestoreRefused, message: "updated in place: c"},
		{name: "refuses with a server marked for remediation", status: at(""),
			world: with(healthy(), func(w *World) { w.Servers[0].MarkedForRemediation = true }),
			phase: controlplanev1.EtcdRestoreRefused, message: "marked for remediation: a"},
		{name: "refuses during a rollout", status: at(""),
			world: with(healthy(), func(w *World) { w.Servers[0].Outdated = true }),
			phase: controlplanev1.EtcdRestoreRefused, message: "rollout is in progress"},
		{name: "refuses while scaling", status: at(""),
			world: with(healthy(), func(w *World) { w.Servers = w.Servers[:2] }),
			phase: controlplanev1.EtcdRestoreRefused, message: "scaling: 2 servers, 3 wanted"},

		// DeletingServers: every server but the restore's own goes, also after an
		// interruption half-way (some already deleting).
		{name: "deletes every old server", status: at(controlplanev1.EtcdRestoreDeletingServers), world: healthy(),
			phase: controlplanev1.EtcdRestoreDeletingServers, delete: []string{"a", "b", "c"}, message: "workload API is down"},
		{name: "resumed half-way, still deletes the rest and releases the deleting ones",
			status: at(controlplanev1.EtcdRestoreDeletingServers),
			world: with(healthy(), func(w *World) {
				w.Servers = []Server{{Name: "a", Deleting: true}, ready("b")}
			}),
			phase: controlplanev1.EtcdRestoreDeletingServers, delete: []string{"a", "b"}},
		{name: "a server of an earlier restore is old too", status: at(controlplanev1.EtcdRestoreDeletingServers),
			world: with(healthy(), func(w *World) { w.Servers = []Server{{Name: "x", RestoreOf: "restore-0", Ready: true}} }),
			phase: controlplanev1.EtcdRestoreDeletingServers, delete: []string{"x"}},
		{name: "all gone: on to the first server", status: at(controlplanev1.EtcdRestoreDeletingServers),
			world: with(healthy(), func(w *World) { w.Servers = nil }),
			phase: controlplanev1.EtcdRestoreRestoringFirstServer, message: "creating the first server"},
		{name: "the control plane deleted meanwhile: failed", status: at(controlplanev1.EtcdRestoreDeletingServers),
			world: with(healthy(), func(w *World) { w.ControlPlane = nil }),
			phase: controlplanev1.EtcdRestoreFailed, message: "deleted during the restore"},

		{name: "paused meanwhile: nothing is done", status: at(controlplanev1.EtcdRestoreDeletingServers),
			world: with(healthy(), func(w *World) { w.Paused = true }),
			phase: controlplanev1.EtcdRestoreDeletingServers, message: "paused with the Cluster"},

		// RestoringFirstServer.
		{name: "creates the first server", status: at(controlplanev1.EtcdRestoreRestoringFirstServer),
			world: with(healthy(), func(w *World) {
				w.Servers, w.OldAPI = nil, OldAPI{Probe: metav1.ConditionFalse, ProbeSince: t0, Now: t0.Add(ProbeFailedMargin)}
			}),
			phase: controlplanev1.EtcdRestoreRestoringFirstServer, create: true},
		// Cluster API's caches of the old workload API would never see the restored
		// cluster: they must be dropped before it starts.
		{name: "holds the first server while CAPI's probe has not failed long enough", status: at(controlplanev1.EtcdRestoreRestoringFirstServer),
			world: with(healthy(), func(w *World) {
				w.Servers, w.OldAPI = nil, OldAPI{Probe: metav1.ConditionFalse, ProbeSince: t0, Now: t0.Add(ProbeFailedMargin - time.Second)}
			}),
			phase: controlplanev1.EtcdRestoreRestoringFirstServer, message: "RemoteConnectionProbe on the Cluster has been False since 2026-01-02T03:04:05Z"},
		{name: "holds the first server while CAPI still probes the old API successfully", status: at(controlplanev1.EtcdRestoreRestoringFirstServer),
			world: with(healthy(), func(w *World) { w.Servers = nil }),
			phase: controlplanev1.EtcdRestoreRestoringFirstServer, message: "held until Cluster API has dropped its caches"},
		{name: "holds the first server while this manager's cache is connected", status: at(controlplanev1.EtcdRestoreRestoringFirstServer),
			world: with(healthy(), func(w *World) {
				w.Servers, w.OldAPI = nil, OldAPI{Probe: metav1.ConditionFalse, ProbeSince: t0, Now: t0.Add(time.Hour), CacheConnected: true}
			}),
			phase: controlplanev1.EtcdRestoreRestoringFirstServer, message: "this manager's ClusterCache is still connected"},
		{name: "resumed after creating it: never a second one", status: at(controlplanev1.EtcdRestoreRestoringFirstServer),
			world: with(healthy(), func(w *World) {
				w.Servers = []Server{{Name: "n", RestoreOf: me, Status: "waiting for infrastructure"}}
			}),
			phase: controlplanev1.EtcdRestoreRestoringFirstServer, message: "on the first server n: waiting for infrastructure"},
		{name: "a server the control plane made meanwhile is deleted", status: at(controlplanev1.EtcdRestoreRestoringFirstServer),
			world: with(healthy(), func(w *World) { w.Servers = []Server{{Name: "n", RestoreOf: me}, {Name: "j"}} }),
			phase: controlplanev1.EtcdRestoreRestoringFirstServer, delete: []string{"j"}},
		{name: "its first server deleted: waits for it to go, then makes another",
			status: at(controlplanev1.EtcdRestoreRestoringFirstServer),
			world:  with(healthy(), func(w *World) { w.Servers = []Server{{Name: "n", RestoreOf: me, Deleting: true}} }),
			phase:  controlplanev1.EtcdRestoreRestoringFirstServer, message: "to be gone"},
		{name: "S3 removed from the control plane meanwhile: held, not failed",
			status: at(controlplanev1.EtcdRestoreRestoringFirstServer),
			world: with(healthy(), func(w *World) {
				w.Servers = nil
				w.ControlPlane.Spec.KThreesConfigSpec.ServerConfig.Etcd = nil
			}),
			phase: controlplanev1.EtcdRestoreRestoringFirstServer, message: "held before creating the first server"},
		{name: "Ready with its Node: the others join", status: at(controlplanev1.EtcdRestoreRestoringFirstServer),
			world: with(healthy(), func(w *World) { w.Servers = []Server{{Name: "n", RestoreOf: me, Ready: true, HasNode: true}} }),
			phase: controlplanev1.EtcdRestoreJoiningServers, message: "restored on n"},

		// JoiningServers: the control plane acts; servers it joins are never deleted.
		{name: "joining: waits for all Ready", status: at(controlplanev1.EtcdRestoreJoiningServers),
			world: with(healthy(), func(w *World) {
				w.Servers = []Server{{Name: "n", RestoreOf: me, Ready: true, HasNode: true}, {Name: "j"}}
			}),
			phase: controlplanev1.EtcdRestoreJoiningServers, message: "1 of 3 Ready"},
		{name: "joining: waits for etcd", status: at(controlplanev1.EtcdRestoreJoiningServers),
			world: with(healthy(), func(w *World) { w.EtcdHealthy = false }),
			phase: controlplanev1.EtcdRestoreJoiningServers, message: "etcd not healthy yet"},
		{name: "done", status: at(controlplanev1.EtcdRestoreJoiningServers), world: healthy(),
			phase: controlplanev1.EtcdRestoreSucceeded, message: "3 servers Ready"},

		// Finished restores never act again.
		{name: "succeeded stays", status: at(controlplanev1.EtcdRestoreSucceeded), world: World{},
			phase: controlplanev1.EtcdRestoreSucceeded},
		{name: "refused stays even when the world allows it now", status: at(controlplanev1.EtcdRestoreRefused), world: healthy(),
			phase: controlplanev1.EtcdRestoreRefused},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(me, tc.status, tc.world)
			if d.Phase != tc.phase {
				t.Fatalf("phase %s, want %s (message %q)", d.Phase, tc.phase, d.Message)
			}
			if !slices.Equal(d.Delete, tc.delete) {
				t.Errorf("delete %v, want %v", d.Delete, tc.delete)
			}
			if d.CreateFirstServer != tc.create {
				t.Errorf("create first server %v, want %v", d.CreateFirstServer, tc.create)
			}
			if !strings.Contains(d.Message, tc.message) {
				t.Errorf("message %q, want it to contain %q", d.Message, tc.message)
			}
			if tc.snapshot != "" && d.Snapshot != tc.snapshot {
				t.Errorf("snapshot %q, want %q", d.Snapshot, tc.snapshot)
			}
			if d.Phase == controlplanev1.EtcdRestoreRefused && (len(d.Delete) > 0 || d.CreateFirstServer) {
				t.Error("a refused restore acted")
			}
		})
	}
}

// A restore replayed pass by pass, the world following its actions, ends Succeeded
// with every step's condition True; the control plane is held exactly while the old
// servers go and the first server restores.
func TestDecideWalkthrough(t *testing.T) {
	w := healthy()
	w.Lock = Lock{}
	w.Proof.Items = w.Proof.Items[:1]
	status := at("")
	var held []controlplanev1.EtcdRestorePhase
	polled := 0
	for range 20 {
		d := Decide(me, status, w)
		status.Phase, status.Message, status.SnapshotName, status.FirstServer = d.Phase, d.Message, d.Snapshot, d.FirstServer
		status.SafetySnapshot = d.SafetySnapshot
		status.Conditions = Conditions(status.Phase, d)
		if len(d.Delete) > 0 && status.SafetySnapshot == "" {
			t.Fatal("servers deleted before a safety snapshot was recorded")
		}
		if Holds(d.Phase) {
			held = append(held, d.Phase)
		}
		switch {
		case d.TakeLock:
			w.Lock = Lock{Holder: me}
		case d.TakeSafetySnapshot:
			w.Proof.Items = append(w.Proof.Items, Listed{Name: w.SafetyPrefix + "-a-1700000900",
				Location: "s3://b/c1/" + w.SafetyPrefix + "-a-1700000900", Ready: true, TokenHash: "h1"})
		case len(d.Delete) > 0:
			w.Servers = nil
		case d.Poll:
			polled++
			if w.OldAPI.Probe == "" {
				w.OldAPI = OldAPI{Probe: metav1.ConditionFalse, ProbeSince: t0, Now: t0}
			}
			w.OldAPI.Now = w.OldAPI.Now.Add(20 * time.Second)
		case d.CreateFirstServer:
			w.Servers = []Server{{Name: "n", RestoreOf: me}}
		case d.Phase == controlplanev1.EtcdRestoreRestoringFirstServer && len(w.Servers) == 1:
			w.Servers[0].Ready, w.Servers[0].HasNode = true, true
		case d.Phase == controlplanev1.EtcdRestoreJoiningServers:
			w.Servers = append(w.Servers, ready("j"+string(rune('0'+len(w.Servers)))))
		}
		if d.Phase.Finished() {
			break
		}
	}
	if status.Phase != controlplanev1.EtcdRestoreSucceeded {
		t.Fatalf("phase %s (%s), want Succeeded", status.Phase, status.Message)
	}
	for _, c := range status.Conditions {
		if c.Status != metav1.ConditionTrue {
			t.Errorf("condition %s is %s (%s), want True", c.Type, c.Status, c.Message)
		}
	}
	if polled != 2 {
		t.Errorf("the first server was held %d passes, want 2 (until the probe failed for %s)", polled, ProbeFailedMargin)
	}
	if len(held) == 0 || slices.Contains(held, controlplanev1.EtcdRestoreJoiningServers) {
		t.Errorf("the control plane was held in %v", held)
	}
}

func TestConditions(t *testing.T) {
	d := Decision{Phase: controlplanev1.EtcdRestoreFailed, Message: "gone"}
	got := Conditions(controlplanev1.EtcdRestoreRestoringFirstServer, d)
	want := map[string]string{
		controlplanev1.EtcdRestoreStartedCondition:             controlplanev1.EtcdRestoreDoneReason,
		controlplanev1.EtcdRestoreServersDeletedCondition:      controlplanev1.EtcdRestoreDoneReason,
		controlplanev1.EtcdRestoreFirstServerRestoredCondition: controlplanev1.EtcdRestoreFailedReason,
		controlplanev1.EtcdRestoreServersJoinedCondition:       controlplanev1.EtcdRestoreWaitingReason,
		controlplanev1.EtcdRestoreReadyCondition:               controlplanev1.EtcdRestoreFailedReason,
	}
	for _, c := range got {
		if want[c.Type] != c.Reason {
			t.Errorf("%s reason %s, want %s", c.Type, c.Reason, want[c.Type])
		}
	}
	refused := Conditions("", Decision{Phase: controlplanev1.EtcdRestoreRefused, Message: "refused, nothing was changed: x"})
	if refused[0].Reason != controlplanev1.EtcdRestoreRefusedReason || refused[0].Message == "" {
		t.Errorf("Started after a refusal: %+v", refused[0])
	}
}

func TestHoldingRestore(t *testing.T) {
	rs := []controlplanev1.KThreesEtcdRestore{
		{ObjectMeta: metav1.ObjectMeta{Name: "old"}, Spec: controlplanev1.KThreesEtcdRestoreSpec{ClusterName: "c"},
			Status: controlplanev1.KThreesEtcdRestoreStatus{Phase: controlplanev1.EtcdRestoreFailed}},
		{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: controlplanev1.KThreesEtcdRestoreSpec{ClusterName: "d"},
			Status: controlplanev1.KThreesEtcdRestoreStatus{Phase: controlplanev1.EtcdRestoreDeletingServers}},
		{ObjectMeta: metav1.ObjectMeta{Name: "joining"}, Spec: controlplanev1.KThreesEtcdRestoreSpec{ClusterName: "c"},
			Status: controlplanev1.KThreesEtcdRestoreStatus{Phase: controlplanev1.EtcdRestoreJoiningServers}},
	}
	rs[0].UID = "u0"
	if got := HoldingRestore(rs, "c", ""); got != "" {
		t.Errorf("held by %q, want none", got)
	}
	// A Failed restore holds the servers while it holds the lock: it failed with
	// no working server, and only a new restore may take over.
	if got := HoldingRestore(rs, "c", "old/u0"); got != "old" {
		t.Errorf("with the lock of the failed restore: held by %q, want old", got)
	}
	if got := HoldingRestore(rs, "c", "old/another-uid"); got != "" {
		t.Errorf("with the lock of a restore gone since: held by %q, want none", got)
	}
	rs[2].Status.Phase = controlplanev1.EtcdRestoreRestoringFirstServer
	if got := HoldingRestore(rs, "c", ""); got != "joining" {
		t.Errorf("held by %q, want joining", got)
	}
}

// Right after a takeover, the new restore is still Pending and the failed one no
// longer holds the lock: the new one holds the servers already, else for a pass the
// control plane would join a server to a cluster that has none.
func TestHoldingRestoreAfterATakeover(t *testing.T) {
	rs := []controlplanev1.KThreesEtcdRestore{
		{ObjectMeta: metav1.ObjectMeta{Name: "failed", UID: "u0"}, Spec: controlplanev1.KThreesEtcdRestoreSpec{ClusterName: "c"},
			Status: controlplanev1.KThreesEtcdRestoreStatus{Phase: controlplanev1.EtcdRestoreFailed}},
		{ObjectMeta: metav1.ObjectMeta{Name: "new", UID: "u1"}, Spec: controlplanev1.KThreesEtcdRestoreSpec{ClusterName: "c"},
			Status: controlplanev1.KThreesEtcdRestoreStatus{Phase: controlplanev1.EtcdRestorePending}},
	}
	if got := HoldingRestore(rs, "c", "new/u1;takeover"); got != "new" {
		t.Errorf("a Pending restore that took over: held by %q, want new", got)
	}
	rs[1].Status.Phase = ""
	if got := HoldingRestore(rs, "c", "new/u1;takeover"); got != "new" {
		t.Errorf("a restore with no phase yet that took over: held by %q, want new", got)
	}
	// A Pending restore with an ordinary lock holds nothing yet: the old servers run.
	if got := HoldingRestore(rs, "c", "new/u1"); got != "" {
		t.Errorf("a Pending restore with the lock: held by %q, want none", got)
	}
	// Once it restored its first server the control plane joins the others: a
	// takeover's lock holds no longer than any restore's.
	for _, p := range []controlplanev1.EtcdRestorePhase{controlplanev1.EtcdRestoreJoiningServers, controlplanev1.EtcdRestoreSucceeded, controlplanev1.EtcdRestoreRefused} {
		rs[1].Status.Phase = p
		if got := HoldingRestore(rs, "c", "new/u1;takeover"); got != "" {
			t.Errorf("a %s restore that took over: held by %q, want none", p, got)
		}
	}
}

// The restored etcd holds the Nodes of the servers that ran when the snapshot was
// taken, which a rollout since may have replaced: once every current server is Ready
// the restore deletes every server's Node (control-plane or etcd role) that no
// current server Machine has, whatever servers the restore itself deleted; never an
// agent's Node, never a Node a server Machine has now. It records those it deletes.
func TestOldServersNodes(t *testing.T) {
	// The restore deletes servers d, e, f (which replaced a, b, c after the snapshot):
	// nothing is recorded for them, their Nodes are not in the snapshot.
	old := healthy()
	for i := range old.Servers {
		old.Servers[i].Name = string(rune('d' + i))
		old.Servers[i].NodeName = old.Servers[i].Name + "-node"
	}
	if d := Decide(me, at(controlplanev1.EtcdRestoreDeletingServers), old); len(d.OldServerNodes) != 0 || len(d.Delete) != 3 {
		t.Fatalf("deleting: recorded %v, delete %v", d.OldServerNodes, d.Delete)
	}

	joined := with(healthy(), func(w *World) {
		w.Servers = []Server{
			{Name: "n", RestoreOf: me, Ready: true, HasNode: true, NodeName: "n-node"},
			{Name: "j1", Ready: true, HasNode: true, NodeName: "j1-node"},
			// A new server whose Node has an old server's name keeps it.
			{Name: "j2", Ready: true, HasNode: true, NodeName: "c-node"},
		}
		w.WorkloadNodes = []WorkloadNode{
			{Name: "a-node", UID: "a-uid", Server: true}, {Name: "n-node", Server: true}, {Name: "j1-node", Server: true},
			{Name: "c-node", Server: true}, {Name: "agent-0"},
			// An etcd-only server's Node has the etcd role only.
			{Name: "b-node", UID: "b-uid", Server: true},
			// No server role: an agent's Node, left alone.
			{Name: "agent-1"},
		}
	})
	status := at(controlplanev1.EtcdRestoreJoiningServers)
	d := Decide(me, status, joined)
	want := []WorkloadNode{{Name: "a-node", UID: "a-uid", Server: true}, {Name: "b-node", UID: "b-uid", Server: true}}
	if d.Phase != controlplanev1.EtcdRestoreJoiningServers || !slices.Equal(d.DeleteNodes, want) || !d.Poll {
		t.Fatalf("joined: phase %s, delete Nodes %v, poll %v (%s)", d.Phase, d.DeleteNodes, d.Poll, d.Message)
	}
	if !slices.Equal(d.OldServerNodes, []string{"a-node", "b-node"}) {
		t.Errorf("joined: recorded %v, want the Nodes it deletes", d.OldServerNodes)
	}
	// A later pass, one deleted: the record keeps both.
	status.OldServerNodes = d.OldServerNodes
	gone := with(joined, func(w *World) { w.WorkloadNodes = w.WorkloadNodes[1:] })
	if d := Decide(me, status, gone); !slices.Equal(d.OldServerNodes, []string{"a-node", "b-node"}) || len(d.DeleteNodes) != 1 {
		t.Errorf("one deleted: recorded %v, delete Nodes %v", d.OldServerNodes, d.DeleteNodes)
	}
	allGone := with(joined, func(w *World) { w.WorkloadNodes = w.WorkloadNodes[1:5] })
	if d := Decide(me, status, allGone); d.Phase != controlplanev1.EtcdRestoreSucceeded || len(d.DeleteNodes) != 0 {
		t.Errorf("old Nodes gone: phase %s, delete Nodes %v", d.Phase, d.DeleteNodes)
	}
	// A current server without its Node yet: nothing is deleted, its Node might be
	// taken for a stray one.
	notYet := with(joined, func(w *World) {
		w.Servers = slices.Clone(w.Servers)
		w.Servers[1].HasNode, w.Servers[1].NodeName = false, ""
	})
	if d := Decide(me, status, notYet); len(d.DeleteNodes) != 0 || d.Phase != controlplanev1.EtcdRestoreJoiningServers {
		t.Errorf("a server without its Node: phase %s, delete Nodes %v", d.Phase, d.DeleteNodes)
	}
	unread := with(joined, func(w *World) { w.WorkloadNodesProblem = "not connected" })
	if d := Decide(me, status, unread); d.Phase != controlplanev1.EtcdRestoreJoiningServers || len(d.DeleteNodes) != 0 || !strings.Contains(d.Message, "not connected") {
		t.Errorf("Nodes unreadable: phase %s, delete Nodes %v, message %q", d.Phase, d.DeleteNodes, d.Message)
	}
}

// The hold names its case and the times it counts from, never an elapsed time: the
// message is the same on every pass while the condition does not change.
func TestOldAPIReleased(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		o    OldAPI
		want string
	}{
		{"missing", OldAPI{Now: since}, "RemoteConnectionProbe on the Cluster is missing; the first server waits until it has been False for 40s"},
		{"true", OldAPI{Probe: metav1.ConditionTrue, ProbeSince: since, Now: since.Add(time.Hour)},
			"has been True since 2026-01-02T03:04:05Z; the first server waits until it has been False for 40s"},
		{"unknown", OldAPI{Probe: metav1.ConditionUnknown, ProbeSince: since, Now: since}, "has been Unknown since 2026-01-02T03:04:05Z"},
		{"false too short", OldAPI{Probe: metav1.ConditionFalse, ProbeSince: since, Now: since.Add(30 * time.Second)},
			"has been False since 2026-01-02T03:04:05Z; the first server waits until it has been False for 40s, at 2026-01-02T03:04:45Z"},
		{"false long enough", OldAPI{Probe: metav1.ConditionFalse, ProbeSince: since, Now: since.Add(40 * time.Second)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.o.released()
			if !contains(got, tc.want) {
				t.Errorf("released: %q, want %q", got, tc.want)
			}
			later := tc.o
			later.Now = later.Now.Add(time.Second)
			if tc.want != "" && later.released() != got {
				t.Errorf("a second later: %q, was %q", later.released(), got)
			}
		})
	}
}

// contains is strings.Contains that wants "" only where nothing is expected.
func contains(got, want string) bool {
	if want == "" {
		return got == ""
	}
	return strings.Contains(got, want)
}

// The margin covers CAPI's disconnect after its probes time out, counted from the
// last good probe L: 5 failed probes of 10s interval + 5s timeout end at L+75s, the
// condition is False from L+50s.
func TestProbeFailedMarginCoversCAPIsDisconnect(t *testing.T) {
	if ProbeFailedMargin < 75*time.Second-50*time.Second+10*time.Second {
		t.Errorf("margin %s: the first server may start before CAPI core drops its caches", ProbeFailedMargin)
	}
}

// A restore that deleted servers but has no first server of its own fails, with the
// way out, once it has gone long enough from its start: else it could wait for ever
// with no server, neither to be taken over nor deleted. A first server that exists
// has its own deadline instead.
func TestNoFirstServerForTooLong(t *testing.T) {
	const deadline = 90 * time.Second
	due := 2*deadline + capiProbeGracePeriod + ProbeFailedMargin
	started := func(phase controlplanev1.EtcdRestorePhase) controlplanev1.KThreesEtcdRestoreStatus {
		s := at(phase)
		s.StartTime = &metav1.Time{Time: t0}
		s.SafetySnapshot = "pre-restore-1-a-1700000900"
		s.Message = "waiting"
		return s
	}
	world := func(after time.Duration, f func(*World)) World {
		return with(healthy(), func(w *World) {
			w.Servers, w.FirstServerDeadline, w.Now = nil, deadline, t0.Add(after)
			w.OldAPI = OldAPI{Probe: metav1.ConditionTrue, ProbeSince: t0, Now: w.Now}
			f(w)
		})
	}
	cases := []struct {
		name   string
		status controlplanev1.KThreesEtcdRestoreStatus
		world  World
		failed bool
	}{
		{name: "Cluster API never lets the old API go: in time", status: started(controlplanev1.EtcdRestoreRestoringFirstServer),
			world: world(due-time.Second, func(*World) {})},
		{name: "Cluster API never lets the old API go: too long", status: started(controlplanev1.EtcdRestoreRestoringFirstServer),
			world: world(due, func(*World) {}), failed: true},
		{name: "snapshots.s3 removed after the servers were deleted", status: started(controlplanev1.EtcdRestoreRestoringFirstServer),
			world: world(due, func(w *World) {
				w.ControlPlane = s3ControlPlane(3)
				w.ControlPlane.Spec.KThreesConfigSpec.ServerConfig.Etcd.Snapshots.S3 = nil
			}), failed: true},
		{name: "a deleted first server stuck deleting", status: started(controlplanev1.EtcdRestoreRestoringFirstServer),
			world: world(due, func(w *World) { w.Servers = []Server{{Name: "n", RestoreOf: me, Deleting: true, Created: t0}} }), failed: true},
		{name: "an old server stuck deleting", status: started(controlplanev1.EtcdRestoreDeletingServers),
			world: world(due, func(w *World) { w.Servers = []Server{{Name: "a", Deleting: true, Created: t0}} }), failed: true},
		{name: "a first server created late has its own deadline", status: started(controlplanev1.EtcdRestoreRestoringFirstServer),
			world: world(due+time.Minute, func(w *World) {
				w.Servers = []Server{{Name: "n", RestoreOf: me, Created: t0.Add(due)}}
			})},
		{name: "no start time recorded", status: at(controlplanev1.EtcdRestoreRestoringFirstServer),
			world: world(time.Hour, func(*World) {})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(me, tc.status, tc.world)
			if (d.Phase == controlplanev1.EtcdRestoreFailed) != tc.failed {
				t.Fatalf("phase %s, failed want %v (%q)", d.Phase, tc.failed, d.Message)
			}
			if !tc.failed {
				return
			}
			for _, m := range []string{"has no first server within 4m30s of its start at 2026-01-02T03:04:05Z", "last step: waiting",
				"Way out: create a new KThreesEtcdRestore", "pre-restore-1-a-1700000900", "etcd-snapshot-a-1700000000"} {
				if !strings.Contains(d.Message, m) {
					t.Errorf("message %q, want %q", d.Message, m)
				}
			}
			if d.CreateFirstServer || len(d.Delete) > 0 {
				t.Errorf("a failed restore acts: %+v", d)
			}
		})
	}
}
