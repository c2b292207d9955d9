package etcdsnapshot

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/workload"
)

func rec(object, name, node string, s3, ready bool, errMsg string) workload.EtcdSnapshot {
	size := resource.MustParse("12Mi")
	t := metav1.Unix(1700000000, 0)
	loc := "file:///var/lib/rancher/k3s/server/db/snapshots/" + name
	if s3 {
		loc = "s3://bucket/folder/" + name
	}
	return workload.EtcdSnapshot{Object: object, Name: name, NodeName: node, Location: loc, S3: s3, ReadyToUse: ready, Error: errMsg, Size: &size, CreationTime: &t}
}

func TestOutcomeOfFindsOnlyItsOwnSnapshot(t *testing.T) {
	const name = "on-demand-1a2b3c4d"
	other := rec("o1", "on-demand-ffffffff-server-0-1700000000", "server-0", false, true, "")
	scheduled := rec("o2", "etcd-snapshot-server-0-1700000000", "server-0", false, true, "")
	// A prefix of ours that is another object's name must not match either.
	longer := rec("o3", "on-demand-1a2b3c4dx-server-0-1700000000", "server-0", false, true, "")
	if o := outcomeOf(name, []workload.EtcdSnapshot{other, scheduled, longer}, false); o.result != nil || o.done {
		t.Fatalf("outcome = %+v, want nothing found", o)
	}
}

func TestOutcomeOf(t *testing.T) {
	const name = "on-demand-1a2b3c4d"
	snap := name + "-server-0-1700000000"
	local := rec("local-file", snap, "server-0", false, true, "")
	up := rec("s3-file", snap, "s3", true, true, "")
	for _, tc := range []struct {
		name     string
		records  []workload.EtcdSnapshot
		wantS3   bool
		done     bool
		failure  string
		s3Loc    bool
		objCount int
	}{
		{name: "local only, done", records: []workload.EtcdSnapshot{local}, done: true, objCount: 1},
		{name: "local saved, upload not recorded yet", records: []workload.EtcdSnapshot{local}, wantS3: true, objCount: 1},
		{name: "both copies", records: []workload.EtcdSnapshot{local, up}, wantS3: true, done: true, s3Loc: true, objCount: 2},
		{name: "save failed", records: []workload.EtcdSnapshot{rec("f", snap, "server-0", false, false, "etcd: no leader")}, done: true, failure: "etcd: no leader", objCount: 1},
		{name: "upload failed", records: []workload.EtcdSnapshot{local, rec("s", snap, "s3", true, false, "bucket not found")}, wantS3: true, done: true, failure: "failed to upload it to S3: bucket not found", s3Loc: true, objCount: 2},
		{name: "local not ready yet", records: []workload.EtcdSnapshot{rec("l", snap, "server-0", false, false, "")}, objCount: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := outcomeOf(name, tc.records, tc.wantS3)
			if o.done != tc.done || (tc.failure == "") != (o.failure == "") || !strings.Contains(o.failure, tc.failure) {
				t.Fatalf("outcome = done %v failure %q, want done %v failure %q", o.done, o.failure, tc.done, tc.failure)
			}
			r := o.result
			if r == nil || r.Name != snap || r.NodeName != "server-0" || !strings.HasPrefix(r.Location, "file://") {
				t.Fatalf("result = %+v", r)
			}
			if (r.S3Location != "") != tc.s3Loc || len(r.ETCDSnapshotFiles) != tc.objCount {
				t.Fatalf("result = %+v", r)
			}
		})
	}
}

func TestRequestedNameCarriesTheUID(t *testing.T) {
	s := &controlplanev1.KThreesEtcdSnapshot{}
	s.UID = types.UID("1a2b3c4d-aaaa-bbbb-cccc-000000000000")
	if got := requestedName(s); got != "on-demand-1a2b3c4d" {
		t.Fatalf("requestedName = %q", got)
	}
	s.Spec.NamePrefix = "nightly"
	if got := requestedName(s); got != "nightly-1a2b3c4d" {
		t.Fatalf("requestedName = %q", got)
	}
}
