package controlplane

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

func rolloutSnap(name string, attempt string, phase controlplanev1.KThreesEtcdSnapshotPhase, done time.Time) controlplanev1.KThreesEtcdSnapshot {
	s := controlplanev1.KThreesEtcdSnapshot{}
	s.Name = name
	s.Labels = map[string]string{controlplanev1.EtcdSnapshotAttemptLabel: attempt}
	s.Status.Phase = phase
	if phase == controlplanev1.EtcdSnapshotFailed {
		s.Status.Error = "k3s answered 500"
		t := metav1.NewTime(done)
		s.Status.CompletionTime = &t
	}
	return s
}

func TestDecideRolloutSnapshot(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	failed := func(name, attempt string, ago time.Duration) controlplanev1.KThreesEtcdSnapshot {
		return rolloutSnap(name, attempt, controlplanev1.EtcdSnapshotFailed, now.Add(-ago))
	}
	for _, tc := range []struct {
		name    string
		snaps   []controlplanev1.KThreesEtcdSnapshot
		proceed bool
		create  int
		reason  string
		message string
		requeue bool
	}{
		{name: "none yet: create the first", create: 1, reason: controlplanev1.WaitingForEtcdSnapshotReason},
		{name: "running: wait", snaps: []controlplanev1.KThreesEtcdSnapshot{rolloutSnap("a-1", "1", controlplanev1.EtcdSnapshotRunning, now)},
			reason: controlplanev1.WaitingForEtcdSnapshotReason, message: "waits for etcd snapshot a-1"},
		{name: "new object without phase: wait", snaps: []controlplanev1.KThreesEtcdSnapshot{rolloutSnap("a-1", "1", "", now)},
			reason: controlplanev1.WaitingForEtcdSnapshotReason},
		{name: "succeeded after a failure: go", snaps: []controlplanev1.KThreesEtcdSnapshot{failed("a-1", "1", time.Hour), rolloutSnap("a-2", "2", controlplanev1.EtcdSnapshotSucceeded, now)}, proceed: true},
		{name: "failed recently: back off", snaps: []controlplanev1.KThreesEtcdSnapshot{failed("a-1", "1", 10*time.Second)},
			reason: controlplanev1.WaitingForEtcdSnapshotReason, message: "attempt 2 of 3 at 2026-12-03T12:00:50Z", requeue: true},
		{name: "failed a while ago: next attempt", snaps: []controlplanev1.KThreesEtcdSnapshot{failed("a-1", "1", 2*time.Minute)}, create: 2,
			reason: controlplanev1.WaitingForEtcdSnapshotReason},
		{name: "second failure waits longer", snaps: []controlplanev1.KThreesEtcdSnapshot{failed("a-1", "1", time.Hour), failed("a-2", "2", 2*time.Minute)},
			reason: controlplanev1.WaitingForEtcdSnapshotReason, requeue: true},
		{name: "three failures: stop and say how to go on", snaps: []controlplanev1.KThreesEtcdSnapshot{failed("a-1", "1", time.Hour), failed("a-2", "2", time.Hour), failed("a-3", "3", time.Hour)},
			reason: controlplanev1.EtcdSnapshotBeforeRolloutFailedReason, message: "Disabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := decideRolloutSnapshot(tc.snaps, "l=v", now)
			if g.proceed != tc.proceed || g.create != tc.create || g.reason != tc.reason || (g.requeueAfter > 0) != tc.requeue {
				t.Fatalf("gate = %+v", g)
			}
			if !strings.Contains(g.message, tc.message) {
				t.Fatalf("message = %q, want it to contain %q", g.message, tc.message)
			}
		})
	}
}

func TestRolloutIDChangesWithWhatRollsOutOnly(t *testing.T) {
	kcp := &controlplanev1.KThreesControlPlane{}
	kcp.Spec.Version = "v1.35.4+k3s1"
	id := rolloutID(kcp)
	scaled := kcp.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](5)
	if rolloutID(scaled) != id {
		t.Fatal("a scale changes the rollout's identity")
	}
	upgraded := kcp.DeepCopy()
	upgraded.Spec.Version = "v1.36.3+k3s1"
	if rolloutID(upgraded) == id {
		t.Fatal("an upgrade keeps the rollout's identity")
	}
	reconfigured := kcp.DeepCopy()
	reconfigured.Spec.KThreesConfigSpec.ServerConfig.TLSSan = []string{"api.example.com"}
	if rolloutID(reconfigured) == id {
		t.Fatal("a config change keeps the rollout's identity")
	}
}

func TestRolloutSnapshotWanted(t *testing.T) {
	kcp := &controlplanev1.KThreesControlPlane{}
	if rolloutSnapshotWanted(kcp) {
		t.Fatal("wanted before the control plane is initialized")
	}
	kcp.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	if !rolloutSnapshotWanted(kcp) {
		t.Fatal("not wanted by default on embedded etcd")
	}
	off := kcp.DeepCopy()
	off.Spec.RolloutStrategy = &controlplanev1.RolloutStrategy{EtcdSnapshot: controlplanev1.EtcdSnapshotBeforeRolloutDisabled}
	if rolloutSnapshotWanted(off) {
		t.Fatal("wanted while Disabled")
	}
	ext := kcp.DeepCopy()
	ext.Spec.KThreesConfigSpec.ServerConfig.Datastore = &bootstrapv1.Datastore{}
	if rolloutSnapshotWanted(ext) {
		t.Fatal("wanted with an external datastore")
	}
}
