package k3smodel

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
)

// SnapshotTokenHashAnnotation is where k3s puts, on an ETCDSnapshotFile, the hash of
// the server token of the cluster that took the snapshot (pkg/etcd/snapshot/types.go
// AnnotationTokenHash; v1.34.9, v1.35.4, v1.36.2). For an object in S3 it comes from
// the object's metadata "k3s-token-hash" (pkg/etcd/s3/s3.go ListSnapshots).
const SnapshotTokenHashAnnotation = "etcd.k3s.cattle.io/snapshot-token-hash"

// TokenHash is k3s's hash of a server token: the first 12 hex digits of the SHA-256
// of its passphrase (pkg/util/token.go GetTokenHash, NormalizeToken, ShortHash;
// v1.34.9, v1.35.4, v1.36.2).
func TokenHash(passphrase string) string {
	sum := sha256.Sum256([]byte(passphrase))
	return hex.EncodeToString(sum[:])[:12]
}

// S3ListObject is one object of the simulated S3 a list reads: its key and the
// token hash in its metadata ("" for an object put without one).
type S3ListObject struct {
	Key, TokenHash string
}

// ListedS3Snapshots are the items k3s's "list" answers for the objects of a bucket
// (pkg/etcd/snapshot.go ListSnapshots, pkg/etcd/s3/s3.go ListSnapshots and
// pkg/etcd/snapshot/types.go ToETCDSnapshotFile; v1.36.2, alike in v1.34.9 and
// v1.35.4): the objects whose key starts with the request's folder (a plain prefix,
// no slash added, recursive), metadata objects under ".metadata/" left out; each
// named by its key's base, at "s3://<bucket>/<key>", node "s3", ready to use, with
// the request's S3 settings (folder as "prefix") and the token hash of its metadata.
func ListedS3Snapshots(s3 *EtcdS3, endpoint string, objects []S3ListObject) []map[string]any {
	var out []map[string]any
	for _, o := range objects {
		if !strings.HasPrefix(o.Key, s3.Folder) || path.Base(path.Dir(o.Key)) == ".metadata" {
			continue
		}
		name := path.Base(o.Key)
		annotations := map[string]any{}
		if o.TokenHash != "" {
			annotations[SnapshotTokenHashAnnotation] = o.TokenHash
		}
		out = append(out, map[string]any{
			"metadata": map[string]any{"labels": map[string]any{SnapshotStorageNodeLabel: "s3"}, "annotations": annotations},
			"spec": map[string]any{"snapshotName": name, "nodeName": "s3", "location": fmt.Sprintf("s3://%s/%s", s3.Bucket, o.Key),
				"s3": map[string]any{"bucket": s3.Bucket, "endpoint": endpoint, "prefix": s3.Folder, "region": s3.Region, "insecure": s3.Insecure}},
			"status": map[string]any{"readyToUse": true},
		})
	}
	return out
}
