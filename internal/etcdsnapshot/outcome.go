package etcdsnapshot

import (
	"fmt"
	"strings"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/workload"
)

// outcome is what k3s's records say of one requested snapshot.
type outcome struct {
	// result is nil while k3s records nothing of it.
	result *controlplanev1.EtcdSnapshotResult
	// done: the records decide it (succeeded, or failed with failure).
	done    bool
	failure string
}

// outcomeOf reads the ETCDSnapshotFile records of the snapshot sent as name: k3s
// names it "<name>-<node>-<unix time>" (".zip" when compressed), once on the
// node's disk and once in S3 when uploaded (pkg/etcd/snapshot.go). Pure.
func outcomeOf(name string, records []workload.EtcdSnapshot, wantS3 bool) outcome {
	var local, s3 *workload.EtcdSnapshot
	for i := range records {
		rec := &records[i]
		if !strings.HasPrefix(rec.Name, name+"-") {
			continue
		}
		if rec.S3 {
			s3 = rec
		} else {
			local = rec
		}
	}
	if local == nil && s3 == nil {
		return outcome{}
	}
	res := &controlplanev1.EtcdSnapshotResult{}
	for _, rec := range []*workload.EtcdSnapshot{s3, local} {
		if rec == nil {
			continue
		}
		res.Name, res.CreationTime, res.Size = rec.Name, rec.CreationTime, rec.Size
		res.ETCDSnapshotFiles = append(res.ETCDSnapshotFiles, rec.Object)
		if rec.S3 {
			res.S3Location = rec.Location
		} else {
			res.NodeName, res.Location = rec.NodeName, rec.Location
		}
	}
	out := outcome{result: res}
	switch {
	case local != nil && local.Error != "":
		out.done, out.failure = true, fmt.Sprintf("k3s failed to save snapshot %s on node %s: %s", local.Name, local.NodeName, local.Error)
	case local != nil && !local.ReadyToUse, local == nil && !wantS3:
	case !wantS3:
		out.done = true
	case s3 == nil:
		// Saved on the node; the upload is not recorded yet.
	case s3.Error != "":
		out.done = true
		out.failure = fmt.Sprintf("k3s saved snapshot %s on node %s but failed to upload it to S3: %s", res.Name, res.NodeName, s3.Error)
	case s3.ReadyToUse:
		out.done = true
	}
	return out
}

// succeededMessage says where the snapshot is.
func succeededMessage(res *controlplanev1.EtcdSnapshotResult) string {
	msg := fmt.Sprintf("k3s took snapshot %s", res.Name)
	if res.NodeName != "" {
		msg += " on node " + res.NodeName
	}
	if res.S3Location != "" {
		msg += ", uploaded to " + res.S3Location
	}
	return msg
}
