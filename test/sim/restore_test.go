package sim

import (
	"strings"
	"testing"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/token"
)

// TestFirstServerRestoreAsK3sReadsIt renders first servers that restore, as the
// bootstrap provider would, and carries the restore out as k3s would: with etcd-s3 on,
// the path is a key in the bucket's folder; a local file needs S3 off for the restore.
func TestFirstServerRestoreAsK3sReadsIt(t *testing.T) {
	t.Parallel()
	const folder = "restore-test"
	PutS3Object("s3.amazonaws.com", "backups", folder+"/etcd-snapshot-old-1")
	const local = "/var/lib/etcd-snapshots/etcd-snapshot-old-1"
	for _, tc := range []struct {
		name, restoreFrom string
		s3, writeFile     bool
		wantErr           string
	}{
		{name: "a snapshot in S3", restoreFrom: "etcd-snapshot-old-1", s3: true},
		{name: "a snapshot S3 does not hold", restoreFrom: "etcd-snapshot-old-2", s3: true,
			wantErr: "failed to download snapshot from S3: s3://backups/restore-test/etcd-snapshot-old-2"},
		{name: "a local file beside S3", restoreFrom: local, s3: true, writeFile: true},
		{name: "a local file", restoreFrom: local, writeFile: true},
		{name: "a local file the machine does not have", restoreFrom: local, wantErr: "etcd: snapshot path does not exist: " + local},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := restoreData(t, tc.restoreFrom, tc.s3, tc.writeFile, folder)
			_, err := b.checkRestore()
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("checkRestore() = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func restoreData(t *testing.T, restoreFrom string, s3, writeFile bool, folder string) *bootData {
	t.Helper()
	ca := mustCAs(t, theCAs)
	j := mustJoinTokens(t, token.Token{Server: "s3rver", Agent: "ag3nt"}, ca.serverCA)
	in := cloudinit.Input{Role: cloudinit.ServerInit, Version: testVersion, Token: j.server, AgentToken: j.agent,
		Certificates: ca.files, TLSSANs: []string{"cp.example.com"}}
	in.Spec.ServerConfig.Etcd = &bootstrapv1.Etcd{RestoreFrom: restoreFrom,
		Snapshots: &bootstrapv1.EtcdSnapshots{Schedule: "0 */6 * * *"}}
	if s3 {
		in.Spec.ServerConfig.Etcd.Snapshots.S3 = &bootstrapv1.EtcdSnapshotsS3{Bucket: "backups", Folder: folder}
	}
	if writeFile {
		in.Files = []cloudinit.File{{Path: restoreFrom, Content: "snapshot"}}
	}
	b, _ := parseRendered(t, mustRender(t, in))
	return b
}
