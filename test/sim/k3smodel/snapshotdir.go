package k3smodel

import (
	"fmt"
	"path"
)

// DefaultSnapshotDir is where k3s keeps etcd snapshots when etcd-snapshot-dir is
// unset: <data-dir>/server/db/snapshots, the data dir being /var/lib/rancher/k3s
// for root (pkg/etcd/snapshot.go snapshotDir, pkg/datadir/datadir.go
// DefaultDataDir; v1.34.9, v1.35.4, v1.36.2).
const DefaultSnapshotDir = "/var/lib/rancher/k3s/server/db/snapshots"

// SnapshotDir is k3s's snapshotDir (pkg/etcd/snapshot.go; the same in v1.34.9,
// v1.35.4 and v1.36.2): the folder snapshots are saved to and S3 snapshots are
// downloaded into. k3s creates only its default folder ("Non-default snapshot dirs
// must be created by the user"); any other must already exist, or k3s returns
// os.Stat's error. exists says whether a folder exists on the server. Every
// snapshot save (scheduled or on demand) and a cluster-reset restore from S3 or of
// a compressed file go through it, wrapping its error ("failed to get
// etcd-snapshot-dir" for a save, "failed to get the snapshot dir" for a restore,
// pkg/etcd/etcd.go).
func SnapshotDir(dir string, exists func(string) bool) (string, error) {
	if dir == "" {
		dir = DefaultSnapshotDir
	}
	if path.Clean(dir) == DefaultSnapshotDir || exists(dir) {
		return dir, nil
	}
	return "", fmt.Errorf("stat %s: no such file or directory", dir)
}
