package k3smodel

import (
	"strings"
	"testing"
)

func TestSnapshotDirCreatesOnlyTheDefault(t *testing.T) {
	none := func(string) bool { return false }
	for _, dir := range []string{"", DefaultSnapshotDir, DefaultSnapshotDir + "/"} {
		if _, err := SnapshotDir(dir, none); err != nil {
			t.Errorf("default folder %q: %v; k3s creates it", dir, err)
		}
	}
	_, err := SnapshotDir("/var/lib/etcd-snapshots", none)
	if err == nil || !strings.Contains(err.Error(), "stat /var/lib/etcd-snapshots: no such file or directory") {
		t.Errorf("missing non-default folder: %v, want os.Stat's error", err)
	}
	got, err := SnapshotDir("/var/lib/etcd-snapshots", func(d string) bool { return d == "/var/lib/etcd-snapshots" })
	if err != nil || got != "/var/lib/etcd-snapshots" {
		t.Errorf("existing folder: %q, %v", got, err)
	}
}
