package restoreplan

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// Before anything is deleted, k3s's list (asked with the control plane's S3 block)
// must show the snapshot at the key a new server downloads, ready, taken by this
// cluster; then the restore takes the control plane's lock, then a safety snapshot,
// and only then deletes. Each refusal says what was checked and what failed, and
// asks for nothing to be done.
func TestDecidePendingProof(t *testing.T) {
	const name = "etcd-snapshot-a-1700000000"
	pending := at("")
	withSafety := at("")
	withSafety.SafetySnapshot = "pre-restore-1-a-1700000900"
	carried := at("")
	carried.SafetySnapshot = "pre-restore-0-a-1700000500"
	items := func(w *World, l ...Listed) { w.Proof.Items = l }
	cases := []struct {
		name     string
		status   controlplanev1.KThreesEtcdRestoreStatus
		world    World
		phase    controlplanev1.EtcdRestorePhase
		message  []string
		lock     bool
		safety   bool
		recorded string // status.safetySnapshot to record
	}{
		{name: "a snapshot that does not exist", status: pending,
			world: with(healthy(), func(w *World) { w.Snapshot.Name = "etcd-snapshot-typo" }),
			phase: controlplanev1.EtcdRestoreRefused,
			message: []string{"nothing was changed", `snapshot "etcd-snapshot-typo" in bucket "b", folder "c1"`, "Cluster c1",
				"k3s lists no object at s3://b/c1/etcd-snapshot-typo"}},
		{name: "only on a server's disk", status: pending,
			world: with(healthy(), func(w *World) {
				items(w, Listed{Name: name, Location: "file:///var/lib/rancher/k3s/server/db/snapshots/" + name, Ready: true, TokenHash: "h1"})
			}),
			phase: controlplanev1.EtcdRestoreRefused, message: []string{"no object at s3://b/c1/" + name, "only at file:///var/lib"}},
		{name: "in a sibling's folder of the same bucket", status: pending,
			world: with(healthy(), func(w *World) {
				items(w, Listed{Name: name, Location: "s3://b/c10/" + name, Ready: true, TokenHash: "h2"})
			}),
			phase: controlplanev1.EtcdRestoreRefused, message: []string{"only at s3://b/c10/" + name}},
		{name: "another cluster's snapshot in this folder", status: pending,
			world: with(healthy(), func(w *World) {
				items(w, Listed{Name: name, Location: "s3://b/c1/" + name, Ready: true, TokenHash: "h2"})
			}),
			phase: controlplanev1.EtcdRestoreRefused, message: []string{"another join token (token hash h2, this cluster's h1)"}},
		{name: "an object without k3s's token hash", status: pending,
			world: with(healthy(), func(w *World) { items(w, Listed{Name: name, Location: "s3://b/c1/" + name, Ready: true}) }),
			phase: controlplanev1.EtcdRestoreRefused, message: []string{"carries no k3s token hash"}},
		{name: "not ready to use", status: pending,
			world: with(healthy(), func(w *World) {
				items(w, Listed{Name: name, Location: "s3://b/c1/" + name, Error: "upload failed", TokenHash: "h1"})
			}),
			phase: controlplanev1.EtcdRestoreRefused, message: []string{"not ready to use: upload failed"}},
		{name: "credentials k3s cannot read the bucket with", status: pending,
			world: with(healthy(), func(w *World) {
				w.Proof = Proof{Refused: "k3s answered 400 Bad Request: failed to initialize S3 client: Access Denied."}
			}),
			phase: controlplanev1.EtcdRestoreRefused, message: []string{"could not list the bucket with these settings and credentials", "Access Denied"}},
		{name: "the supervisor does not answer: waits", status: pending,
			world: with(healthy(), func(w *World) {
				w.Proof, w.Now = Proof{Unreachable: "connection refused"}, t0.Add(ProofWait-time.Second)
			}),
			phase: controlplanev1.EtcdRestorePending, message: []string{"did not answer, asking again until 2026-01-02T03:09:05Z", "connection refused"}},
		{name: "the supervisor does not answer for too long: refused", status: pending,
			world: with(healthy(), func(w *World) { w.Proof, w.Now = Proof{Unreachable: "connection refused"}, t0.Add(ProofWait) }),
			phase: controlplanev1.EtcdRestoreRefused, message: []string{"did not answer for 5m0s"}},
		{name: "a referenced snapshot known only later: the wait counts from then", status: pending,
			world: with(healthy(), func(w *World) {
				w.Snapshot.KnownSince = t0.Add(10 * time.Minute)
				w.Proof, w.Now = Proof{Unreachable: "connection refused"}, t0.Add(10*time.Minute+ProofWait-time.Second)
			}),
			phase: controlplanev1.EtcdRestorePending, message: []string{"did not answer, asking again until 2026-01-02T03:19:05Z"}},
		{name: "a referenced snapshot known only later: refused once the wait is over", status: pending,
			world: with(healthy(), func(w *World) {
				w.Snapshot.KnownSince = t0.Add(10 * time.Minute)
				w.Proof, w.Now = Proof{Unreachable: "connection refused"}, t0.Add(10*time.Minute+ProofWait)
			}),
			phase: controlplanev1.EtcdRestoreRefused, message: []string{"did not answer for 5m0s"}},
		{name: "proven: takes the lock first", status: pending,
			world: with(healthy(), func(w *World) { w.Lock = Lock{} }),
			phase: controlplanev1.EtcdRestorePending, lock: true, message: []string{"proven", "taking the control plane's restore lock"}},
		{name: "another restore holds the lock", status: pending,
			world: with(healthy(), func(w *World) {
				w.Lock = Lock{Holder: "restore-0", HolderPhase: controlplanev1.EtcdRestoreRestoringFirstServer}
			}),
			phase: controlplanev1.EtcdRestoreRefused, message: []string{"KThreesEtcdRestore restore-0 holds this control plane (phase RestoringFirstServer)"}},
		{name: "another restore holds the lock, still Pending", status: pending,
			world: with(healthy(), func(w *World) { w.Lock = Lock{Holder: "restore-0"} }),
			phase: controlplanev1.EtcdRestoreRefused, message: []string{"restore-0 holds this control plane (phase Pending)"}},
		{name: "lock held: a safety snapshot before anything is deleted", status: pending,
			world: with(healthy(), func(w *World) { w.Proof.Items = w.Proof.Items[:1] }),
			phase: controlplanev1.EtcdRestorePending, safety: true, message: []string{"taking a safety snapshot pre-restore-1"}},
		{name: "a safety snapshot in another folder is not this one's", status: pending,
			world: with(healthy(), func(w *World) { w.Proof.Items[1].Location = "s3://b/c2/pre-restore-1-a-1700000900" }),
			phase: controlplanev1.EtcdRestorePending, safety: true},
		{name: "the safety snapshot taken but not recorded: found in the list", status: pending, world: healthy(),
			phase: controlplanev1.EtcdRestoreDeletingServers, recorded: "pre-restore-1-a-1700000900",
			message: []string{"safety snapshot pre-restore-1-a-1700000900 taken"}},
		{name: "the safety snapshot recorded: deletes", status: withSafety,
			world: with(healthy(), func(w *World) { w.Proof.Items = w.Proof.Items[:1] }),
			phase: controlplanev1.EtcdRestoreDeletingServers, recorded: "pre-restore-1-a-1700000900"},
		{name: "a safety snapshot carried from a takeover that did not happen is not this one's", status: carried,
			world: with(healthy(), func(w *World) { w.Proof.Items = w.Proof.Items[:1] }),
			phase: controlplanev1.EtcdRestorePending, safety: true, message: []string{"taking a safety snapshot pre-restore-1"}},
		{name: "the endpoint is a server's own address", status: pending,
			world: with(healthy(), func(w *World) { w.EndpointServer = "a" }),
			phase: controlplanev1.EtcdRestoreRefused, message: []string{"controlPlaneEndpoint is the own address of server a", "load balancer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(me, tc.status, tc.world)
			if d.Phase != tc.phase {
				t.Fatalf("phase %s, want %s (message %q)", d.Phase, tc.phase, d.Message)
			}
			for _, m := range tc.message {
				if !strings.Contains(d.Message, m) {
					t.Errorf("message %q, want it to contain %q", d.Message, m)
				}
			}
			if d.TakeLock != tc.lock || d.TakeSafetySnapshot != tc.safety || d.SafetySnapshot != tc.recorded {
				t.Errorf("take lock %v, safety snapshot %v, recorded %q; want %v, %v, %q", d.TakeLock, d.TakeSafetySnapshot, d.SafetySnapshot, tc.lock, tc.safety, tc.recorded)
			}
			if d.Phase == controlplanev1.EtcdRestorePending && d.Snapshot != "" && !strings.Contains(d.Message, "proven") {
				t.Errorf("snapshot %q recorded before it was proven", d.Snapshot)
			}
			if len(d.Delete) > 0 || d.CreateFirstServer {
				t.Error("a Pending restore acted on the servers")
			}
		})
	}
}

// A restore that takes over from a failed one (which deleted the servers) needs no
// running cluster: it may restore only what the failed restore proved or took, and
// takes no safety snapshot; the servers' state (1 of 3, not Ready) does not refuse it.
func TestDecideTakeover(t *testing.T) {
	failed := func(w *World) {
		w.Servers = []Server{{Name: "n", RestoreOf: "restore-0", Status: "restore failed"}}
		w.Proof = Proof{Unreachable: "connection refused"}
		w.Now = t0.Add(time.Hour)
		w.Lock = Lock{Holder: "restore-0", HolderPhase: controlplanev1.EtcdRestoreFailed,
			HolderSnapshot: "etcd-snapshot-a-1700000000", HolderSafetySnapshot: "pre-restore-0-a-1700000500"}
		w.Snapshot.Name = "pre-restore-0-a-1700000500"
	}
	d := Decide(me, at(""), with(healthy(), failed))
	if d.Phase != controlplanev1.EtcdRestorePending || !d.TakeLock || !d.TakeOver || d.TakeSafetySnapshot || !strings.Contains(d.Message, "taking over") {
		t.Fatalf("takeover: %+v", d)
	}
	held := with(healthy(), func(w *World) { failed(w); w.Lock = Lock{Holder: me, TakenOver: true} })
	if d := Decide(me, at(""), held); d.Phase != controlplanev1.EtcdRestoreDeletingServers || d.TakeSafetySnapshot || d.Snapshot != "pre-restore-0-a-1700000500" {
		t.Fatalf("taken over: %+v", d)
	}
	// Then the failed restore's first server goes like any old one.
	status := at(controlplanev1.EtcdRestoreDeletingServers)
	if d := Decide(me, status, held); len(d.Delete) != 1 || d.Delete[0] != "n" {
		t.Errorf("deleting after a takeover: %+v", d)
	}
	other := with(healthy(), func(w *World) { failed(w); w.Snapshot.Name = "etcd-snapshot-b-1600000000" })
	d = Decide(me, at(""), other)
	if d.Phase != controlplanev1.EtcdRestoreRefused || !strings.Contains(d.Message, "etcd-snapshot-a-1700000000, pre-restore-0-a-1700000500") {
		t.Errorf("another snapshot after a failed restore: %s %q", d.Phase, d.Message)
	}
}

// The first server has a deadline from its creation; past it the restore fails,
// naming the way out.
func TestFirstServerDeadline(t *testing.T) {
	status := at(controlplanev1.EtcdRestoreRestoringFirstServer)
	status.SafetySnapshot = "pre-restore-1-a-1700000900"
	late := func(after time.Duration, deadline time.Duration) World {
		return with(healthy(), func(w *World) {
			w.Servers = []Server{{Name: "n", RestoreOf: me, Status: "k3s exited", Created: t0}}
			w.Now, w.FirstServerDeadline = t0.Add(after), deadline
		})
	}
	if d := Decide(me, status, late(DefaultFirstServerDeadline-time.Second, 0)); d.Phase != controlplanev1.EtcdRestoreRestoringFirstServer {
		t.Errorf("in time: %s %q", d.Phase, d.Message)
	}
	d := Decide(me, status, late(DefaultFirstServerDeadline, 0))
	if d.Phase != controlplanev1.EtcdRestoreFailed {
		t.Fatalf("late: %s %q", d.Phase, d.Message)
	}
	for _, m := range []string{"first server n did not restore", "within 20m0s of its creation at 2026-01-02T03:04:05Z", "k3s exited",
		"new KThreesEtcdRestore", "pre-restore-1-a-1700000900"} {
		if !strings.Contains(d.Message, m) {
			t.Errorf("message %q, want %q", d.Message, m)
		}
	}
	if d := Decide(me, status, late(2*time.Minute, time.Minute)); d.Phase != controlplanev1.EtcdRestoreFailed {
		t.Errorf("a shorter deadline: %s", d.Phase)
	}
	ready := with(late(time.Hour, 0), func(w *World) { w.Servers[0].Ready, w.Servers[0].HasNode = true, true })
	if d := Decide(me, status, ready); d.Phase != controlplanev1.EtcdRestoreJoiningServers {
		t.Errorf("restored late but restored: %s", d.Phase)
	}
}

// The lock names its holder by name and UID: free when that restore is gone (another
// UID), Succeeded or Refused; a takeover is told by its suffix.
func TestLockHolder(t *testing.T) {
	rs := []controlplanev1.KThreesEtcdRestore{
		{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "ua"}, Status: controlplanev1.KThreesEtcdRestoreStatus{
			Phase: controlplanev1.EtcdRestoreFailed, SnapshotName: "s", SafetySnapshot: "p"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", UID: "ub"}, Status: controlplanev1.KThreesEtcdRestoreStatus{Phase: controlplanev1.EtcdRestoreSucceeded}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c", UID: "uc"}},
	}
	for _, tc := range []struct {
		lock string
		want Lock
	}{
		{"", Lock{}},
		{"a/ua", Lock{Holder: "a", HolderPhase: controlplanev1.EtcdRestoreFailed, HolderSnapshot: "s", HolderSafetySnapshot: "p"}},
		{"a/old-uid", Lock{}},
		{"b/ub", Lock{}},
		{"c/uc;takeover", Lock{Holder: "c", TakenOver: true}},
	} {
		if got := LockHolder(rs, tc.lock); got != tc.want {
			t.Errorf("lock %q: %+v, want %+v", tc.lock, got, tc.want)
		}
	}
}

// A restore that takes over from a failed one carries that restore's safety
// snapshot: when it fails too, its way out still offers the cluster as it was
// before the first restore, and a third restore that takes over from it may still
// restore that safety snapshot.
func TestTwoTakeoversKeepTheSafetySnapshot(t *testing.T) {
	const x, safety = "etcd-snapshot-a-1700000000", "pre-restore-0-a-1700000500"
	lockOn := func(r controlplanev1.KThreesEtcdRestore, takeover bool) Lock {
		v := LockValue(&r)
		if takeover {
			v = TakeoverLockValue(&r)
		}
		return LockHolder([]controlplanev1.KThreesEtcdRestore{r}, v)
	}
	failedWorld := func(holder controlplanev1.KThreesEtcdRestore, snapshot string) World {
		return with(healthy(), func(w *World) {
			w.Servers = []Server{{Name: "n", RestoreOf: holder.Name, Status: "restore failed", Created: t0}}
			w.Proof = Proof{Unreachable: "connection refused"}
			w.Now = t0.Add(time.Hour)
			w.Lock = lockOn(holder, false)
			w.Snapshot.Name = snapshot
		})
	}
	// Restore A took the safety snapshot, restored x, and failed.
	a := controlplanev1.KThreesEtcdRestore{ObjectMeta: metav1.ObjectMeta{Name: "restore-0", UID: "u0"},
		Status: controlplanev1.KThreesEtcdRestoreStatus{Phase: controlplanev1.EtcdRestoreFailed, SnapshotName: x, SafetySnapshot: safety}}

	// B (me) takes over from A to x again.
	d := Decide(me, at(""), failedWorld(a, x))
	if !d.TakeOver || d.SafetySnapshot != safety {
		t.Fatalf("B's takeover: take over %v, safety snapshot %q, want %q (%q)", d.TakeOver, d.SafetySnapshot, safety, d.Message)
	}
	b := controlplanev1.KThreesEtcdRestore{ObjectMeta: metav1.ObjectMeta{Name: me, UID: "u1"},
		Status: controlplanev1.KThreesEtcdRestoreStatus{Phase: d.Phase, SnapshotName: d.Snapshot, SafetySnapshot: d.SafetySnapshot}}
	held := with(failedWorld(a, x), func(w *World) { w.Lock = lockOn(b, true) })
	d = Decide(me, b.Status, held)
	if d.Phase != controlplanev1.EtcdRestoreDeletingServers || d.SafetySnapshot != safety || !strings.Contains(d.Message, safety) {
		t.Fatalf("B after the takeover: %s, safety snapshot %q, message %q", d.Phase, d.SafetySnapshot, d.Message)
	}
	// B's first server fails too: its way out offers the safety snapshot and x.
	b.Status.Phase, b.Status.SnapshotName, b.Status.SafetySnapshot = controlplanev1.EtcdRestoreRestoringFirstServer, d.Snapshot, d.SafetySnapshot
	late := with(healthy(), func(w *World) {
		w.Servers = []Server{{Name: "m", RestoreOf: me, Status: "k3s exited", Created: t0}}
		w.Now = t0.Add(time.Hour)
	})
	d = Decide(me, b.Status, late)
	if d.Phase != controlplanev1.EtcdRestoreFailed || !strings.Contains(d.Message, "spec.snapshotName "+safety+" (") || !strings.Contains(d.Message, " or "+x) {
		t.Fatalf("B failed: %s %q, want the way out to offer %s and %s", d.Phase, d.Message, safety, x)
	}
	b.Status.Phase, b.Status.SafetySnapshot = d.Phase, d.SafetySnapshot

	// C takes over from B to the safety snapshot A took: accepted, and still carried.
	d = Decide("restore-2", at(""), failedWorld(b, safety))
	if d.Phase != controlplanev1.EtcdRestorePending || !d.TakeOver || d.SafetySnapshot != safety {
		t.Fatalf("C's takeover to the safety snapshot: %s, take over %v, safety %q, message %q", d.Phase, d.TakeOver, d.SafetySnapshot, d.Message)
	}
	// and to x, B's own snapshot, too; to anything else, refused, naming both.
	if d = Decide("restore-2", at(""), failedWorld(b, x)); !d.TakeOver {
		t.Errorf("C's takeover to %s: %s %q", x, d.Phase, d.Message)
	}
	d = Decide("restore-2", at(""), failedWorld(b, "etcd-snapshot-b-1600000000"))
	if d.Phase != controlplanev1.EtcdRestoreRefused || !strings.Contains(d.Message, x+", "+safety) {
		t.Errorf("C's takeover to another snapshot: %s %q", d.Phase, d.Message)
	}
}
