package etcdrestore

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// A referenced KThreesEtcdSnapshot gives its name only once it succeeded into S3;
// one still running is waited for; a failed one, one without a name and one only on
// a server's disk are refused with the reason.
func TestSnapshotOf(t *testing.T) {
	const name = "on-demand-cp-a-1700000000"
	for _, tc := range []struct {
		name           string
		status         controlplanev1.KThreesEtcdSnapshotStatus
		want, wait, no string
	}{
		{name: "succeeded into S3", status: controlplanev1.KThreesEtcdSnapshotStatus{Phase: controlplanev1.EtcdSnapshotSucceeded,
			Snapshot: &controlplanev1.EtcdSnapshotResult{Name: name, Location: "file:///var/lib/rancher/k3s/server/db/snapshots/" + name,
				S3Location: "s3://backups/c1/" + name}}, want: name},
		{name: "running", status: controlplanev1.KThreesEtcdSnapshotStatus{Phase: controlplanev1.EtcdSnapshotRunning}, wait: "is Running"},
		{name: "no status yet", wait: "not done yet"},
		{name: "failed", status: controlplanev1.KThreesEtcdSnapshotStatus{Phase: controlplanev1.EtcdSnapshotFailed, Error: "S3 refused the upload"},
			no: "failed: S3 refused the upload"},
		{name: "no name", status: controlplanev1.KThreesEtcdSnapshotStatus{Phase: controlplanev1.EtcdSnapshotSucceeded,
			Snapshot: &controlplanev1.EtcdSnapshotResult{S3Location: "s3://b/x"}}, no: "without a snapshot name"},
		{name: "no result", status: controlplanev1.KThreesEtcdSnapshotStatus{Phase: controlplanev1.EtcdSnapshotSucceeded}, no: "without a snapshot name"},
		{name: "on a disk only", status: controlplanev1.KThreesEtcdSnapshotStatus{Phase: controlplanev1.EtcdSnapshotSucceeded,
			Snapshot: &controlplanev1.EtcdSnapshotResult{Name: name, Location: "file:///var/lib/rancher/k3s/server/db/snapshots/" + name}},
			no: "not in S3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := &controlplanev1.KThreesEtcdSnapshot{Status: tc.status}
			snap.Name = "snap-1"
			got := snapshotOf(snap)
			if got.Name != tc.want || !contains(got.Wait, tc.wait) || !contains(got.Problem, tc.no) {
				t.Errorf("snapshot %+v, want name %q, wait %q, problem %q", got, tc.want, tc.wait, tc.no)
			}
		})
	}
}

// A referenced snapshot's name is known from its completion: the restore's wait for
// k3s's list counts from then.
func TestSnapshotOfKnownSince(t *testing.T) {
	done := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	snap := &controlplanev1.KThreesEtcdSnapshot{Status: controlplanev1.KThreesEtcdSnapshotStatus{Phase: controlplanev1.EtcdSnapshotSucceeded,
		CompletionTime: &done, Snapshot: &controlplanev1.EtcdSnapshotResult{Name: "n", S3Location: "s3://b/c1/n"}}}
	if got := snapshotOf(snap); !got.KnownSince.Equal(done.Time) {
		t.Errorf("known since %v, want the snapshot's completion %v", got.KnownSince, done.Time)
	}
}

// contains is strings.Contains that wants "" only where nothing is expected.
func contains(got, want string) bool {
	if want == "" {
		return got == ""
	}
	return strings.Contains(got, want)
}
