package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// ListedSnapshot is one item of k3s's answer to "list": an ETCDSnapshotFile as k3s
// builds it from a file on the answering server's disk or an object in S3
// (pkg/etcd/snapshot/types.go ToETCDSnapshotFile; v1.34.9, v1.35.4, v1.36.2).
type ListedSnapshot struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations,omitempty"`
	} `json:"metadata"`
	Spec struct {
		SnapshotName string `json:"snapshotName"`
		NodeName     string `json:"nodeName,omitempty"`
		// Location is "s3://<bucket>/<key>" for an object in S3, "file://<path>" for a
		// file on the answering server.
		Location string `json:"location,omitempty"`
		S3       *struct {
			Endpoint string `json:"endpoint,omitempty"`
			Bucket   string `json:"bucket,omitempty"`
			// Prefix is the folder the object was listed under.
			Prefix string `json:"prefix,omitempty"`
		} `json:"s3,omitempty"`
	} `json:"spec"`
	Status struct {
		ReadyToUse *bool `json:"readyToUse,omitempty"`
		Error      *struct {
			Message *string `json:"message,omitempty"`
		} `json:"error,omitempty"`
	} `json:"status"`
}

// TokenHashAnnotation is where k3s puts, on a listed snapshot, the hash of the
// server token of the cluster that took it (pkg/etcd/snapshot/types.go
// AnnotationTokenHash; read from the S3 object's metadata, pkg/etcd/s3/s3.go).
const TokenHashAnnotation = "etcd.k3s.cattle.io/snapshot-token-hash"

// TokenHash is k3s's hash of a server token (pkg/util/token.go GetTokenHash: the
// first 12 hex digits of the SHA-256 of the token's passphrase), as k3s records it
// with every snapshot it uploads. A snapshot whose hash differs was taken by a
// cluster with another token; k3s cannot read the bootstrap data it holds.
func TokenHash(passphrase string) string {
	sum := sha256.Sum256([]byte(passphrase))
	return hex.EncodeToString(sum[:])[:12]
}

// List asks the server behind the endpoint for its snapshots: with s3, k3s first
// checks that it can reach the bucket with those settings and keys (answering 400
// "failed to initialize S3 client" when it cannot), then lists the objects under the
// folder, and the snapshot files on its own disk (pkg/etcd/snapshot_handler.go
// handleList, pkg/etcd/snapshot.go ListSnapshots). Errors are as Save's.
func (c *Client) List(ctx context.Context, s3 *S3) ([]ListedSnapshot, error) {
	body, err := json.Marshal(snapshotRequest{Operation: "list", S3: s3})
	if err != nil {
		return nil, err
	}
	b, err := c.post(ctx, body)
	if err != nil {
		return nil, err
	}
	var out struct {
		Items []ListedSnapshot `json:"items"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("reading k3s's answer to the snapshot list: %w", err)
	}
	return out.Items, nil
}
