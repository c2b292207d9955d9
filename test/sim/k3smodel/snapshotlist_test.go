package k3smodel

import "testing"

// k3s lists the objects whose key starts with the folder as a plain prefix (a
// sibling folder "c10" is listed for "c1"), leaves the metadata objects out, and
// names each by its key's base at s3://<bucket>/<key>.
func TestListedS3Snapshots(t *testing.T) {
	got := ListedS3Snapshots(&EtcdS3{Bucket: "b", Folder: "c1"}, "s3.example.com", []S3ListObject{
		{Key: "c1/snap-a", TokenHash: "h1"}, {Key: "c1/.metadata/snap-a"}, {Key: "c10/snap-b"}, {Key: "other/snap-c"},
	})
	if len(got) != 2 {
		t.Fatalf("listed %v", got)
	}
	spec := got[0]["spec"].(map[string]any)
	ann := got[0]["metadata"].(map[string]any)["annotations"].(map[string]any)
	if spec["snapshotName"] != "snap-a" || spec["location"] != "s3://b/c1/snap-a" || ann[SnapshotTokenHashAnnotation] != "h1" {
		t.Errorf("first item %v", got[0])
	}
	if got[1]["spec"].(map[string]any)["location"] != "s3://b/c10/snap-b" {
		t.Errorf("second item %v", got[1])
	}
	if TokenHash("p4ss") != "bfadce1a771b" {
		t.Errorf("TokenHash = %s", TokenHash("p4ss"))
	}
}
