package controlplane

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/workload"
	"github.com/capk3s/capk3s/test/envtest"

	"github.com/capk3s/capk3s/test/cpfixtures"
)

// snapshotFile creates an ETCDSnapshotFile as k3s does: the spec at creation, the
// status through its subresource.
func snapshotFile(t *testing.T, c client.Client, name, node string, created time.Time, s3 bool, ready bool, errMsg string) {
	t.Helper()
	ctx := context.Background()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(workload.ETCDSnapshotFileKind)
	u.SetName(name)
	spec := map[string]any{"snapshotName": name, "nodeName": node, "location": "file:///var/lib/rancher/k3s/server/db/snapshots/" + name}
	if s3 {
		spec["location"] = "s3://backups/cluster-a/" + name
		spec["s3"] = map[string]any{"bucket": "backups", "endpoint": "s3.example.com"}
	}
	u.Object["spec"] = spec
	if err := c.Create(ctx, u); err != nil {
		t.Fatalf("creating ETCDSnapshotFile %s: %v", name, err)
	}
	status := map[string]any{"creationTime": created.UTC().Format(time.RFC3339), "readyToUse": ready, "size": "1234567"}
	if errMsg != "" {
		status["error"] = map[string]any{"time": created.UTC().Format(time.RFC3339), "message": errMsg}
	}
	u.Object["status"] = status
	if err := c.Status().Update(ctx, u); err != nil {
		t.Fatalf("status of ETCDSnapshotFile %s: %v", name, err)
	}
}

// TestLatestEtcdSnapshotOnARealAPIServer reads k3s's records from a real
// kube-apiserver: first without the kind (no snapshot yet, no error), then the
// newest of several, failed ones included.
func TestLatestEtcdSnapshotOnARealAPIServer(t *testing.T) {
	ctx := context.Background()
	// Before the CRD exists: a workload cluster whose k3s has not installed it.
	got, err := workload.LatestEtcdSnapshot(ctx, env.Client)
	if err != nil || got != nil {
		t.Fatalf("without the kind: got %+v, %v; want no snapshot and no error", got, err)
	}
	if err := envtest.InstallETCDSnapshotFileCRD(ctx, env.Config); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	snapshotFile(t, env.Client, "etcd-snapshot-cp-0-1", "cp-0", base, false, true, "")
	snapshotFile(t, env.Client, "etcd-snapshot-cp-1-2", "cp-1", base.Add(time.Hour), true, true, "")
	snapshotFile(t, env.Client, "etcd-snapshot-cp-2-0", "cp-2", base.Add(-time.Hour), false, false, "disk full")

	got, err = workload.LatestEtcdSnapshot(ctx, env.Client)
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Name != "etcd-snapshot-cp-1-2" || got.NodeName != "cp-1" || !got.S3 || !got.ReadyToUse ||
		got.Location != "s3://backups/cluster-a/etcd-snapshot-cp-1-2" || got.Size == nil || got.Size.Value() != 1234567 ||
		!got.CreationTime.Time.Equal(base.Add(time.Hour)) {
		t.Fatalf("newest = %+v, want the S3 snapshot of cp-1", got)
	}

	// A newer failed snapshot becomes the newest, with k3s's error.
	snapshotFile(t, env.Client, "etcd-snapshot-cp-0-3", "cp-0", base.Add(2*time.Hour), false, false, "upload failed: Access Denied")
	got, err = workload.LatestEtcdSnapshot(ctx, env.Client)
	if err != nil || got == nil || got.Name != "etcd-snapshot-cp-0-3" || got.ReadyToUse || got.Error != "upload failed: Access Denied" {
		t.Fatalf("newest = %+v, %v; want the failed snapshot of cp-0", got, err)
	}
}

func withSnapshots(kcp *controlplanev1.KThreesControlPlane) *controlplanev1.KThreesControlPlane {
	kcp.Spec.KThreesConfigSpec.ServerConfig.Etcd = &bootstrapv1.Etcd{Snapshots: &bootstrapv1.EtcdSnapshots{Schedule: "0 */6 * * *"}}
	return kcp
}

func TestEtcdSnapshotsCondition(t *testing.T) {
	machines := collections.FromMachines(&clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "cp-0"}})
	created := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	ready := &workload.EtcdSnapshot{Name: "etcd-snapshot-cp-0-1", NodeName: "cp-0", Location: "file:///x", CreationTime: &created, ReadyToUse: true}
	failed := &workload.EtcdSnapshot{Name: "etcd-snapshot-cp-0-2", NodeName: "cp-0", CreationTime: &created, Error: "disk full"}
	tests := []struct {
		name       string
		kcp        *controlplanev1.KThreesControlPlane
		seen       observed
		wantStatus metav1.ConditionStatus // "" means the condition is absent
		wantReason string
		wantLast   string
	}{
		{"not configured", &controlplanev1.KThreesControlPlane{}, observed{machines: machines, snapshots: etcdSnapshots{read: true, latest: ready}}, "", "", ""},
		{"on an external datastore", cpfixtures.OnDatastore(withSnapshots(&controlplanev1.KThreesControlPlane{})), observed{machines: machines, snapshots: etcdSnapshots{read: true, latest: ready}}, "", "", ""},
		{"no server yet", withSnapshots(&controlplanev1.KThreesControlPlane{}), observed{}, metav1.ConditionFalse, controlplanev1.EtcdNoSnapshotYetReason, ""},
		{"unreachable", withSnapshots(&controlplanev1.KThreesControlPlane{}), observed{machines: machines}, metav1.ConditionUnknown, controlplanev1.WorkloadClusterUnreachableReason, ""},
		{"none yet", withSnapshots(&controlplanev1.KThreesControlPlane{}), observed{machines: machines, snapshots: etcdSnapshots{read: true}}, metav1.ConditionFalse, controlplanev1.EtcdNoSnapshotYetReason, ""},
		{"ready", withSnapshots(&controlplanev1.KThreesControlPlane{}), observed{machines: machines, snapshots: etcdSnapshots{read: true, latest: ready}}, metav1.ConditionTrue, controlplanev1.EtcdSnapshotAvailableReason, ready.Name},
		{"failed", withSnapshots(&controlplanev1.KThreesControlPlane{}), observed{machines: machines, snapshots: etcdSnapshots{read: true, latest: failed}}, metav1.ConditionFalse, controlplanev1.EtcdSnapshotFailedReason, failed.Name},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kcp := tc.kcp
			// What an earlier pass left must go when snapshots are not configured.
			kcp.Status.LastEtcdSnapshot = &controlplanev1.LastEtcdSnapshotStatus{Name: "old"}
			conditions.Set(kcp, metav1.Condition{Type: controlplanev1.EtcdSnapshotsAvailableCondition, Status: metav1.ConditionTrue, Reason: "Old"})
			setEtcdSnapshots(kcp, tc.seen)
			c := conditions.Get(kcp, controlplanev1.EtcdSnapshotsAvailableCondition)
			switch {
			case tc.wantStatus == "" && c != nil:
				t.Fatalf("condition set: %+v", c)
			case tc.wantStatus == "":
				if kcp.Status.LastEtcdSnapshot != nil {
					t.Fatalf("lastEtcdSnapshot kept: %+v", kcp.Status.LastEtcdSnapshot)
				}
				return
			case c == nil || c.Status != tc.wantStatus || c.Reason != tc.wantReason:
				t.Fatalf("condition = %+v, want %s/%s", c, tc.wantStatus, tc.wantReason)
			}
			last := ""
			if kcp.Status.LastEtcdSnapshot != nil {
				last = kcp.Status.LastEtcdSnapshot.Name
			}
			want := tc.wantLast
			if !tc.seen.snapshots.read {
				want = "old" // unread: the last known snapshot stays
			}
			if last != want {
				t.Errorf("lastEtcdSnapshot = %q, want %q", last, want)
			}
		})
	}
}

// TestEtcdSnapshotsSummary counts every record k3s keeps and names the newest S3
// copy, beside the newest snapshot that status.lastEtcdSnapshot keeps reporting.
func TestEtcdSnapshotsSummary(t *testing.T) {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(h int) *metav1.Time { t := metav1.NewTime(base.Add(time.Duration(h) * time.Hour)); return &t }
	all := []workload.EtcdSnapshot{
		{Name: "etcd-snapshot-cp-0-1", NodeName: "cp-0", CreationTime: at(0), ReadyToUse: true},
		{Name: "etcd-snapshot-cp-0-1", NodeName: "s3", S3: true, Location: "s3://b/etcd-snapshot-cp-0-1", CreationTime: at(0), ReadyToUse: true},
		{Name: "on-demand-1a2b3c4d-cp-1-2", NodeName: "cp-1", CreationTime: at(2), ReadyToUse: true},
		{Name: "etcd-snapshot-cp-0-3", NodeName: "s3", S3: true, CreationTime: at(1), Error: "Access Denied"},
	}
	machines := collections.FromMachines(&clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "cp-0"}})
	kcp := withSnapshots(&controlplanev1.KThreesControlPlane{})
	setEtcdSnapshots(kcp, observed{machines: machines, snapshots: summarize(all)})
	sum := kcp.Status.EtcdSnapshots
	if sum == nil || sum.Count != 4 || sum.ReadyCount != 3 || sum.LastS3 == nil || sum.LastS3.Name != "etcd-snapshot-cp-0-3" || sum.LastS3.ReadyToUse {
		t.Fatalf("summary = %+v", sum)
	}
	if l := kcp.Status.LastEtcdSnapshot; l == nil || l.Name != "on-demand-1a2b3c4d-cp-1-2" {
		t.Fatalf("lastEtcdSnapshot = %+v, want the on-demand one", l)
	}
	// An unreadable pass keeps the summary; snapshots turned off remove it.
	setEtcdSnapshots(kcp, observed{machines: machines})
	if kcp.Status.EtcdSnapshots == nil || kcp.Status.EtcdSnapshots.Count != 4 {
		t.Fatalf("summary after an unreadable pass = %+v", kcp.Status.EtcdSnapshots)
	}
	kcp.Spec.KThreesConfigSpec.ServerConfig.Etcd = nil
	setEtcdSnapshots(kcp, observed{machines: machines, snapshots: summarize(all)})
	if kcp.Status.EtcdSnapshots != nil {
		t.Fatalf("summary without snapshots configured = %+v", kcp.Status.EtcdSnapshots)
	}
}
