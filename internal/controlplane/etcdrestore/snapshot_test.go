package etcdrestore

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A referenced KThreesEtcdSnapshot gives its name only once it succeeded into S3;
// one still running is waited for; a failed one, one without a name and one on a
// server's disk are refused with the reason.
func TestSnapshotOf(t *testing.T) {
	for _, tc := range []struct {
		name           string
		status         map[string]any
		want, wait, no string
	}{
		{name: "succeeded into S3", status: map[string]any{"phase": "Succeeded",
			"name": "on-demand-cp-a-1700000000", "location": "s3://backups/c1/on-demand-cp-a-1700000000"},
			want: "on-demand-cp-a-1700000000"},
		{name: "result nested", status: map[string]any{"phase": "Succeeded",
			"result": map[string]any{"name": "on-demand-cp-a-1", "location": "s3://b/on-demand-cp-a-1"}},
			want: "on-demand-cp-a-1"},
		{name: "running", status: map[string]any{"phase": "Running"}, wait: "is Running"},
		{name: "no status yet", status: nil, wait: "not done yet"},
		{name: "failed", status: map[string]any{"phase": "Failed", "error": "S3 refused the upload"}, no: "failed: S3 refused the upload"},
		{name: "no name", status: map[string]any{"phase": "Succeeded", "location": "s3://b/x"}, no: "without a snapshot name"},
		{name: "on a disk", status: map[string]any{"phase": "Succeeded", "name": "on-demand-cp-a-1",
			"location": "file:///var/lib/rancher/k3s/server/db/snapshots/on-demand-cp-a-1"}, no: "not in S3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{}}
			u.SetName("snap-1")
			if tc.status != nil {
				u.Object["status"] = tc.status
			}
			got := snapshotOf(u)
			if got.Name != tc.want || !contains(got.Wait, tc.wait) || !contains(got.Problem, tc.no) {
				t.Errorf("snapshot %+v, want name %q, wait %q, problem %q", got, tc.want, tc.wait, tc.no)
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
