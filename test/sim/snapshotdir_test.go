package sim

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/token"
	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

const testSnapshotDir = "/srv/backups/etcd"

// dirData renders a first server whose snapshots go to testSnapshotDir and that
// restores from S3, as the bootstrap provider would; edit changes its input first.
func dirData(t *testing.T, edit func(*cloudinit.Input)) *bootData {
	t.Helper()
	ca := mustCAs(t, theCAs)
	j := mustJoinTokens(t, token.Token{Server: "s3rver", Agent: "ag3nt"}, ca.serverCA)
	in := cloudinit.Input{Role: cloudinit.ServerInit, Version: testVersion, Token: j.server, AgentToken: j.agent,
		Certificates: ca.files, TLSSANs: []string{"cp.example.com"}}
	in.Spec.ServerConfig.Etcd = &bootstrapv1.Etcd{RestoreFrom: "etcd-snapshot-old-1",
		Snapshots: &bootstrapv1.EtcdSnapshots{Schedule: "0 */6 * * *", Directory: testSnapshotDir,
			S3: &bootstrapv1.EtcdSnapshotsS3{Bucket: "backups", Folder: "dir-test"}}}
	if edit != nil {
		edit(&in)
	}
	b, _ := parseRendered(t, mustRender(t, in))
	return b
}

// withoutFolder is the data as a provider that does not create the folder writes it.
func withoutFolder(b *bootData) *bootData {
	b.commands = slices.DeleteFunc(b.commands, func(c string) bool { return slices.Contains(mkdirFolders(c), testSnapshotDir) })
	return b
}

// k3s creates only its default snapshot folder (k3smodel.SnapshotDir): a restore from
// S3 downloads into etcd-snapshot-dir, and fails when the data did not make it.
func TestRestoreIntoAMissingSnapshotFolderFails(t *testing.T) {
	t.Parallel()
	PutS3Object("s3.amazonaws.com", "backups", "dir-test/etcd-snapshot-old-1")

	if _, err := dirData(t, nil).checkRestore(); err != nil {
		t.Fatalf("the rendered data's restore: %v", err)
	}
	_, err := withoutFolder(dirData(t, nil)).checkRestore()
	if err == nil || !strings.Contains(err.Error(), "failed to get the snapshot dir: stat "+testSnapshotDir+": no such file or directory") {
		t.Fatalf("restore into a folder nobody made = %v, want k3s's snapshot dir error", err)
	}
	// The folder of a file the data writes, or a user's own mkdir, is there.
	b := withoutFolder(dirData(t, nil))
	b.commands = append([]string{"mkdir -pm 0750 -- /srv/backups/etcd"}, b.commands...)
	if _, err := b.checkRestore(); err != nil {
		t.Errorf("restore into a folder a user's mkdir made: %v", err)
	}
	b = withoutFolder(dirData(t, func(in *cloudinit.Input) {
		in.Files = []cloudinit.File{{Path: testSnapshotDir + "/README", Content: "backups"}}
	}))
	if _, err := b.checkRestore(); err != nil {
		t.Errorf("restore into the folder of a written file: %v", err)
	}
	// k3s makes its default folder itself.
	b = withoutFolder(dirData(t, func(in *cloudinit.Input) { in.Spec.ServerConfig.Etcd.Snapshots.Directory = "" }))
	if _, err := b.checkRestore(); err != nil {
		t.Errorf("restore into k3s's default folder: %v", err)
	}
}

// A save into a folder the server does not have fails before anything is saved or
// recorded; a scheduled one is only logged by k3s, so the server keeps running
// without snapshots.
func TestSaveIntoAMissingSnapshotFolderFails(t *testing.T) {
	t.Parallel()
	c := &workloadCluster{serverSettings: map[string]*snapshotPlan{"server-0": withoutFolder(dirData(t, nil)).snapshotSettings()}}
	_, err := c.saveSnapshot(context.Background(), nil, "server-0", k3smodel.SnapshotSettings{Name: "etcd-snapshot", Dir: testSnapshotDir}, time.Now())
	if !isSnapshotDirError(err) || !strings.Contains(err.Error(), "failed to get etcd-snapshot-dir: stat "+testSnapshotDir) {
		t.Fatalf("save into a missing folder = %v, want k3s's snapshot dir error", err)
	}
	plan := c.serverSettings["server-0"]
	plan.scheduled = true
	if err := plan.take(context.Background(), c, nil, "server-0", time.Now()); err != nil {
		t.Errorf("a scheduled save into a missing folder stops the server: %v", err)
	}
	if got := c.localSnapshots["server-0"]; len(got) != 0 {
		t.Errorf("a failed save left files %v", got)
	}
	// The rendered data makes the folder.
	if !dirData(t, nil).snapshotSettings().folders[testSnapshotDir] {
		t.Errorf("the rendered data does not make %s", testSnapshotDir)
	}
}

func TestMkdirFolders(t *testing.T) {
	t.Parallel()
	for cmd, want := range map[string][]string{
		"mkdir -p -m 0700 '/a b' || exit 1":       {"/a b"},
		"mkdir -pm 0700 /a /b":                    {"/a", "/b"},
		"mkdir -m0700 /a && mkdir --mode 0700 /b": {"/a", "/b"},
		"mkdir -- -x /c":                          {"/c"},
		"echo mkdir /a; mkdir $DIR":               nil,
	} {
		if got := mkdirFolders(cmd); !slices.Equal(got, want) {
			t.Errorf("mkdirFolders(%q) = %q, want %q", cmd, got, want)
		}
	}
}
