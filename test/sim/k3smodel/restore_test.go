package k3smodel

import (
	"strings"
	"testing"
)

func TestPlanRestore(t *testing.T) {
	for _, tc := range []struct {
		name, path, folder string
		reset, s3          bool
		want               Restore
		wantErr            string
	}{
		{name: "a local file", path: "/snap/etcd-snapshot-a-1", reset: true, want: Restore{File: "/snap/etcd-snapshot-a-1"}},
		{name: "a name in S3", path: "etcd-snapshot-a-1", folder: "prod", reset: true, s3: true, want: Restore{S3: true, Key: "prod/etcd-snapshot-a-1"}},
		{name: "a local path with S3 on is a key", path: "/snap/etcd-snapshot-a-1", folder: "prod", reset: true, s3: true,
			want: Restore{S3: true, Key: "prod/snap/etcd-snapshot-a-1"}},
		{name: "no cluster-reset", path: "/snap/x", wantErr: "--cluster-reset required"},
		{name: "no path", reset: true, wantErr: "no etcd restore path"},
	} {
		got, err := PlanRestore(tc.path, tc.reset, tc.s3, tc.folder)
		if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErr)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	r, _ := PlanRestore("etcd-snapshot-a-1", true, true, "prod")
	if err := r.Failure("b"); !strings.Contains(err.Error(), "s3://b/prod/etcd-snapshot-a-1") {
		t.Errorf("S3 failure = %v", err)
	}
}

func TestSnapshotRecords(t *testing.T) {
	name := SnapshotName(DefaultSnapshotName, "cp-0", 1700000000, false)
	if name != "etcd-snapshot-cp-0-1700000000" {
		t.Errorf("SnapshotName = %q", name)
	}
	local := LocalSnapshotRecord("cp-0", "/var/lib/rancher/k3s/server/db/snapshots", name)
	s3 := S3SnapshotRecord("cp-0", "backups", "prod", name)
	if local.Location != "file:///var/lib/rancher/k3s/server/db/snapshots/"+name || local.StorageNode != "cp-0" || local.NodeName != "cp-0" ||
		!strings.HasPrefix(local.Name, "local-"+name+"-") || len(local.Name) != len("local-"+name+"-")+6 {
		t.Errorf("local record = %+v", local)
	}
	// The S3 record names the uploading node, not "s3"; only the label says s3.
	if s3.Location != "s3://backups/prod/"+name || s3.NodeName != "cp-0" || s3.StorageNode != "s3" || !strings.HasPrefix(s3.Name, "s3-"+name+"-") {
		t.Errorf("S3 record = %+v", s3)
	}
}
