package supervisor

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

// "list" is sent with the S3 block and no retention; the answer is k3s's
// ETCDSnapshotFileList, read item by item; a 400 (k3s could not reach the bucket
// with those keys) is a StatusError.
func TestListSendsS3AndReadsItems(t *testing.T) {
	f := &fakeK3s{password: "p4ss", answer: func(w http.ResponseWriter) {
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"List","items":[{"metadata":{"name":"s3-x","annotations":{"etcd.k3s.cattle.io/snapshot-token-hash":"abc"}},
"spec":{"snapshotName":"x","nodeName":"s3","location":"s3://b/f/x","s3":{"bucket":"b","prefix":"f","endpoint":"s3.amazonaws.com"}},"status":{"readyToUse":true}}]}`))
	}}
	c := start(t, f)
	items, err := c.List(context.Background(), &S3{Bucket: "b", Folder: "f"})
	if err != nil {
		t.Fatal(err)
	}
	if f.got["operation"] != "list" || f.got["retention"] != nil || f.got["s3"].(map[string]any)["bucket"] != "b" {
		t.Fatalf("request = %v", f.got)
	}
	if len(items) != 1 || items[0].Spec.Location != "s3://b/f/x" || items[0].Spec.S3.Prefix != "f" || !*items[0].Status.ReadyToUse ||
		items[0].Metadata.Annotations[TokenHashAnnotation] != "abc" {
		t.Fatalf("items = %+v", items)
	}
	f.answer = func(w http.ResponseWriter) {
		writeStatus(w, http.StatusBadRequest, "failed to initialize S3 client: failed to test for existence of bucket b: Access Denied.")
	}
	_, err = c.List(context.Background(), &S3{Bucket: "b"})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusBadRequest {
		t.Fatalf("a refused bucket: %v", err)
	}
}

// k3s's token hash: the first 12 hex digits of the passphrase's SHA-256.
func TestTokenHash(t *testing.T) {
	if got := TokenHash("p4ss"); got != "bfadce1a771b" {
		t.Errorf("TokenHash = %q", got)
	}
}
