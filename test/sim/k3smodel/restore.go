package k3smodel

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Restore is what `k3s server --cluster-reset --cluster-reset-restore-path=P` reads
// (k3s pkg/cli/server/server.go and pkg/etcd/etcd.go, Reset; pkg/etcd/s3/s3.go,
// Download; the same in v1.34.9, v1.35.4 and v1.36.2).
type Restore struct {
	// S3 is true when etcd-s3 is on for the restore: P is then the object
	// path.Join(etcd-s3-folder, P) in etcd-s3-bucket, never a local file.
	S3  bool
	Key string
	// File is the local snapshot file restored, without S3.
	File string
}

// PlanRestore reads a cluster-reset restore: P given without --cluster-reset is an
// error; with etcd-s3 on (after the command line's flags, which win over
// config.yaml: pkg/configfilearg/parser.go), P names an object in the bucket's
// folder, even when it is an absolute path; without, a local file.
func PlanRestore(restorePath string, clusterReset, etcdS3 bool, folder string) (Restore, error) {
	switch {
	case restorePath == "":
		return Restore{}, errors.New("no etcd restore path was specified")
	case !clusterReset:
		return Restore{}, errors.New("invalid flag use; --cluster-reset required with --cluster-reset-restore-path")
	case etcdS3:
		return Restore{S3: true, Key: path.Join(folder, restorePath)}, nil
	}
	return Restore{File: restorePath}, nil
}

// ErrTokenMismatch is k3s's error when a restored snapshot's bootstrap data, which
// k3s encrypts with the server token, was written with another token
// (pkg/cluster/storage.go getBootstrapKeyFromStorage; v1.34.9, v1.35.4, v1.36.2):
// the restoring server exits.
var ErrTokenMismatch = errors.New("bootstrap data already found and encrypted with different token")

// Failure is k3s's error when the snapshot is not there: a missing local file, or a
// missing object (minio's NoSuchKey), after which k3s exits without restoring.
func (r Restore) Failure(bucket string) error {
	if r.S3 {
		return fmt.Errorf("failed to download snapshot from S3: s3://%s/%s: The specified key does not exist", bucket, r.Key)
	}
	return fmt.Errorf("etcd: snapshot path does not exist: %s", r.File)
}

// ETCDSnapshotFileKind is k3s's snapshot record (github.com/k3s-io/api,
// k3s.cattle.io/v1), cluster-scoped.
var ETCDSnapshotFileKind = schema.GroupVersionKind{Group: "k3s.cattle.io", Version: "v1", Kind: "ETCDSnapshotFile"}

// SnapshotStorageNodeLabel is the label k3s puts on each record: the node that holds
// the file, or "s3" (pkg/etcd/snapshot/types.go, LabelStorageNode).
const SnapshotStorageNodeLabel = "etcd.k3s.cattle.io/snapshot-storage-node"

// SnapshotName is the name k3s gives a snapshot: base (etcd-snapshot-name, default
// DefaultSnapshotName; an on-demand save's request name, the CLI's default
// OnDemandSnapshotName), the node's name and the Unix time, rounded to the second
// (pkg/etcd/snapshot.go, snapshot), with ".zip" when compressed.
func SnapshotName(base, node string, unix int64, compressed bool) string {
	name := fmt.Sprintf("%s-%s-%d", base, node, unix)
	if compressed {
		name += ".zip"
	}
	return name
}

// SnapshotRecord is the ETCDSnapshotFile k3s writes for a snapshot
// (pkg/etcd/snapshot/types.go, File.GenerateName and ToETCDSnapshotFile).
type SnapshotRecord struct {
	// Name is the object's name: "local-" or "s3-", the lower-cased snapshot name, and
	// the first six hex digits of sha256(node + location).
	Name string
	// NodeName is spec.nodeName: the node that took the snapshot, for the S3 copy too
	// (the uploading node, File.NodeSource).
	NodeName string
	// Location is file://<path> or s3://<bucket>/<key>.
	Location string
	// StorageNode is SnapshotStorageNodeLabel's value: the node, or "s3".
	StorageNode string
}

// LocalSnapshotRecord is the record of a snapshot file on node's disk in dir.
func LocalSnapshotRecord(node, dir, snapshot string) SnapshotRecord {
	loc := "file://" + path.Join(dir, snapshot)
	return SnapshotRecord{Name: recordName("local-", snapshot, node, loc), NodeName: node, Location: loc, StorageNode: node}
}

// S3SnapshotRecord is the record of the copy node uploaded to bucket, key
// path.Join(folder, snapshot) (pkg/etcd/s3/s3.go, Upload).
func S3SnapshotRecord(node, bucket, folder, snapshot string) SnapshotRecord {
	loc := fmt.Sprintf("s3://%s/%s", bucket, path.Join(folder, snapshot))
	return SnapshotRecord{Name: recordName("s3-", snapshot, node, loc), NodeName: node, Location: loc, StorageNode: "s3"}
}

// recordName assumes a snapshot name that is a valid DNS subdomain once lower-cased,
// which k3s's own names are; k3s falls back to another form otherwise.
func recordName(prefix, snapshot, node, location string) string {
	digest := sha256.Sum256([]byte(node + location))
	return prefix + strings.ToLower(snapshot) + "-" + hex.EncodeToString(digest[:])[:6]
}
