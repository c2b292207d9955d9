package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// newSnapshotFixture is an in-place fixture of three servers whose upgrade the
// snapshot before the rollout guards (the default).
func newSnapshotFixture(t *testing.T) *inPlaceFixture {
	t.Helper()
	f := newInPlaceFixture(t, 3, 0, coversVersion())
	f.kcp.Spec.RolloutStrategy.EtcdSnapshot = ""
	f.kcp.Spec.Version = upgradeVersion
	return f
}

func rolloutSnapshots(t *testing.T, f *inPlaceFixture) []controlplanev1.KThreesEtcdSnapshot {
	t.Helper()
	list := &controlplanev1.KThreesEtcdSnapshotList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(f.kcp.Namespace),
		client.HasLabels{controlplanev1.EtcdSnapshotRolloutLabel}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// finishSnapshot plays the KThreesEtcdSnapshot controller ending a snapshot.
func finishSnapshot(t *testing.T, s *controlplanev1.KThreesEtcdSnapshot, phase controlplanev1.KThreesEtcdSnapshotPhase, ago time.Duration) {
	t.Helper()
	done := metav1.NewTime(time.Now().Add(-ago))
	s.Status.Phase, s.Status.CompletionTime = phase, &done
	if phase == controlplanev1.EtcdSnapshotFailed {
		s.Status.Error = "k3s answered 500 Internal Server Error: etcd-snapshot error ID 04242"
	}
	if err := env.Client.Status().Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

func TestRolloutWaitsForItsEtcdSnapshot(t *testing.T) {
	f := newSnapshotFixture(t)
	f.kcp.Labels[clusterv1.WatchLabel] = "shard-a"
	for range 3 {
		f.pass(t)
	}
	if marked := f.marked(t); len(marked) != 0 {
		t.Fatalf("%v updated before the etcd snapshot was taken", marked)
	}
	snaps := rolloutSnapshots(t, f)
	if len(snaps) != 1 {
		t.Fatalf("%d snapshots for one rollout, want 1", len(snaps))
	}
	s := snaps[0]
	if s.Spec.ClusterName != f.cluster.Name || s.Labels[clusterv1.ClusterNameLabel] != f.cluster.Name || s.Labels[controlplanev1.EtcdSnapshotRolloutLabel] != rolloutID(f.kcp) {
		t.Fatalf("snapshot %s: spec %+v labels %v", s.Name, s.Spec, s.Labels)
	}
	if s.Labels[clusterv1.WatchLabel] != "shard-a" {
		t.Fatalf("snapshot %s lacks the control plane's watch-filter label: %v", s.Name, s.Labels)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != f.cluster.UID {
		t.Fatalf("snapshot %s is owned by %v, want the Cluster", s.Name, s.OwnerReferences)
	}
	requireRollingOut(t, f.kcp, controlplanev1.WaitingForEtcdSnapshotReason, s.Name)

	// Every pass is a fresh reconciler, as after a restart of the manager: still one.
	f.pass(t)
	if n := len(rolloutSnapshots(t, f)); n != 1 {
		t.Fatalf("%d snapshots after a restart, want 1", n)
	}

	finishSnapshot(t, &s, controlplanev1.EtcdSnapshotSucceeded, 0)
	f.pass(t)
	if marked := f.marked(t); len(marked) != 1 {
		t.Fatalf("%v marked after the snapshot succeeded, want one server", marked)
	}
	if n := len(rolloutSnapshots(t, f)); n != 1 {
		t.Fatalf("%d snapshots, want 1", n)
	}
}

func TestRolloutStopsWhenItsEtcdSnapshotsFail(t *testing.T) {
	f := newSnapshotFixture(t)
	for attempt := 1; attempt <= rolloutSnapshotAttempts; attempt++ {
		f.pass(t)
		snaps := rolloutSnapshots(t, f)
		if len(snaps) != attempt {
			t.Fatalf("%d snapshots at attempt %d", len(snaps), attempt)
		}
		for i := range snaps {
			if snaps[i].Status.Phase == "" {
				// Failed long enough ago that the backoff is over.
				finishSnapshot(t, &snaps[i], controlplanev1.EtcdSnapshotFailed, time.Hour)
			}
		}
	}
	f.pass(t)
	f.pass(t)
	if n := len(rolloutSnapshots(t, f)); n != rolloutSnapshotAttempts {
		t.Fatalf("%d snapshots, want %d and no more", n, rolloutSnapshotAttempts)
	}
	if marked := f.marked(t); len(marked) != 0 {
		t.Fatalf("%v updated although no snapshot could be taken", marked)
	}
	requireRollingOut(t, f.kcp, controlplanev1.EtcdSnapshotBeforeRolloutFailedReason, "error ID 04242")
	requireRollingOut(t, f.kcp, controlplanev1.EtcdSnapshotBeforeRolloutFailedReason, "etcdSnapshot to Disabled")

	// The way out the message names: roll out without a snapshot.
	f.kcp.Spec.RolloutStrategy.EtcdSnapshot = controlplanev1.EtcdSnapshotBeforeRolloutDisabled
	f.pass(t)
	if marked := f.marked(t); len(marked) != 1 {
		t.Fatalf("%v marked with the snapshot disabled, want one server", marked)
	}
	if !strings.Contains(conditionMessage(f.kcp, controlplanev1.RollingOutCondition), "Updating in place") {
		t.Fatalf("RollingOut: %q", conditionMessage(f.kcp, controlplanev1.RollingOutCondition))
	}
}

func conditionMessage(kcp *controlplanev1.KThreesControlPlane, t string) string {
	for _, c := range kcp.Status.Conditions {
		if c.Type == t {
			return c.Message
		}
	}
	return ""
}

// TestRolloutSnapshotWakesItsControlPlane: a change of the snapshot a rollout
// waits for maps to that control plane; other snapshots wake nobody.
func TestRolloutSnapshotWakesItsControlPlane(t *testing.T) {
	f := newSnapshotFixture(t)
	r := f.reconciler()
	s := &controlplanev1.KThreesEtcdSnapshot{}
	s.Namespace = f.kcp.Namespace
	s.Labels = map[string]string{clusterv1.ClusterNameLabel: f.cluster.Name, controlplanev1.EtcdSnapshotRolloutLabel: "abc"}
	reqs := r.rolloutSnapshotToControlPlane(context.Background(), s)
	if len(reqs) != 1 || reqs[0].Name != f.kcp.Name || reqs[0].Namespace != f.kcp.Namespace {
		t.Fatalf("requests = %v, want the control plane", reqs)
	}
	delete(s.Labels, controlplanev1.EtcdSnapshotRolloutLabel)
	if reqs := r.rolloutSnapshotToControlPlane(context.Background(), s); len(reqs) != 0 {
		t.Fatalf("an on-demand snapshot woke %v", reqs)
	}
}

// blindLister lists no KThreesEtcdSnapshot: a cache that has not seen the one a
// previous pass, or a previous manager, created.
type blindLister struct{ client.Client }

func (b blindLister) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*controlplanev1.KThreesEtcdSnapshotList); ok {
		return nil
	}
	return b.Client.List(ctx, list, opts...)
}

func TestRolloutSnapshotIsNotDuplicatedByAStaleCache(t *testing.T) {
	f := newSnapshotFixture(t)
	f.pass(t)
	f.pass(t)
	if n := len(rolloutSnapshots(t, f)); n != 1 {
		t.Fatalf("%d snapshots, want 1", n)
	}
	r := f.reconciler()
	r.Client = blindLister{env.Client}
	gate, err := r.snapshotBeforeRollout(context.Background(), f.cluster, f.kcp)
	if err != nil || gate.proceed {
		t.Fatalf("gate %+v, %v; want a wait", gate, err)
	}
	if n := len(rolloutSnapshots(t, f)); n != 1 {
		t.Fatalf("%d snapshots after a pass on a stale cache, want 1", n)
	}
}
