package restoreplan

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

const me = "restore-1"

func s3ControlPlane(replicas int32) *controlplanev1.KThreesControlPlane {
	kcp := &controlplanev1.KThreesControlPlane{}
	kcp.Spec.Replicas = ptr.To(replicas)
	kcp.Spec.KThreesConfigSpec.ServerConfig.Etcd = &bootstrapv1.Etcd{Snapshots: &bootstrapv1.EtcdSnapshots{
		S3: &bootstrapv1.EtcdSnapshotsS3{Bucket: "b"}}}
	kcp.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	return kcp
}

func ready(name string) Server { return Server{Name: name, Ready: true, HasNode: true} }

// healthy is a running 3-server cluster with its snapshot known.
func healthy() World {
	return World{ClusterFound: true, ControlPlane: s3ControlPlane(3), EtcdHealthy: true,
		Servers:  []Server{ready("a"), ready("b"), ready("c")},
		Snapshot: Snapshot{Name: "etcd-snapshot-a-1700000000"}}
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
			world: with(healthy(), func(w *World) { w.Servers = nil }),
			phase: controlplanev1.EtcdRestoreRestoringFirstServer, create: true},
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
	status := at("")
	var held []controlplanev1.EtcdRestorePhase
	for range 20 {
		d := Decide(me, status, w)
		status.Phase, status.Message, status.SnapshotName, status.FirstServer = d.Phase, d.Message, d.Snapshot, d.FirstServer
		status.Conditions = Conditions(status.Phase, d)
		if Holds(d.Phase) {
			held = append(held, d.Phase)
		}
		switch {
		case len(d.Delete) > 0:
			w.Servers = nil
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
	if got := HoldingRestore(rs, "c"); got != "" {
		t.Errorf("held by %q, want none", got)
	}
	rs[2].Status.Phase = controlplanev1.EtcdRestoreRestoringFirstServer
	if got := HoldingRestore(rs, "c"); got != "joining" {
		t.Errorf("held by %q, want joining", got)
	}
}
