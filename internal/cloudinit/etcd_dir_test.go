package cloudinit

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// k3s creates only its default snapshot folder (pkg/etcd/snapshot.go snapshotDir:
// "Non-default snapshot dirs must be created by the user"; v1.34.9, v1.35.4,
// v1.36.2), so a server given snapshots.directory gets the folder from its bootstrap
// data, mode 0700 as k3s makes its own (os.MkdirAll(snapshotDir, 0700)), before k3s
// starts and before a restore downloads into it: otherwise every scheduled snapshot
// and a cluster-reset restore from S3 fail on the missing folder.
func TestSnapshotDirectoryIsCreatedBeforeK3s(t *testing.T) {
	dirOnly := &bootstrapv1.Etcd{Snapshots: &bootstrapv1.EtcdSnapshots{Schedule: "0 */6 * * *", Directory: "/var/lib/etcd-snapshots"}}
	withRestore := testEtcd()
	for _, tc := range []struct {
		name  string
		role  Role
		etcd  *bootstrapv1.Etcd
		s3    *EtcdS3
		wants bool
	}{
		{"first server restoring from S3", ServerInit, withRestore, testEtcdS3(), true},
		{"joining server", ServerJoin, withRestore, testEtcdS3(), true},
		{"server without S3", ServerJoin, dirOnly, nil, true},
		{"default folder", ServerJoin, &bootstrapv1.Etcd{Snapshots: &bootstrapv1.EtcdSnapshots{Schedule: "0 * * * *"}}, nil, false},
		{"agent", Agent, dirOnly, nil, false},
	} {
		for _, format := range []bootstrapv1.Format{bootstrapv1.CloudConfig, bootstrapv1.Ignition} {
			t.Run(tc.name+"/"+string(format), func(t *testing.T) {
				in := minimal(tc.role)
				in.Spec.ServerConfig.Etcd, in.EtcdS3, in.Spec.Format = tc.etcd, tc.s3, format
				cmds := renderedCommands(t, in)
				mkdir := slices.IndexFunc(cmds, func(c string) bool { return strings.HasPrefix(c, "mkdir -p -m 0700 '/var/lib/etcd-snapshots'") })
				if !tc.wants {
					if mkdir >= 0 {
						t.Fatalf("creates a snapshot folder it was not given: %s", cmds[mkdir])
					}
					return
				}
				if mkdir < 0 {
					t.Fatalf("no command creates snapshots.directory /var/lib/etcd-snapshots:\n%s", strings.Join(cmds, "\n"))
				}
				for i, c := range cmds {
					starts := strings.Contains(c, "INSTALL_K3S_VERSION=") || strings.Contains(c, "k3s server --cluster-reset")
					if starts && i < mkdir {
						t.Errorf("k3s runs before its snapshot folder exists:\n%s\nbefore\n%s", c, cmds[mkdir])
					}
				}
			})
		}
	}
}

// TestSnapshotDirectoryCommandRuns runs the rendered command in sh: it makes the folder
// and its parents, mode 0700, leaves an existing folder alone, and stops the
// bootstrap, saying why, where the path cannot be a folder.
func TestSnapshotDirectoryCommandRuns(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "data", "etcd snapshots")
	command := func(dir string) string {
		in := minimal(ServerJoin)
		in.Spec.ServerConfig.Etcd = &bootstrapv1.Etcd{Snapshots: &bootstrapv1.EtcdSnapshots{Directory: dir}}
		cmds := renderedCommands(t, in)
		i := slices.IndexFunc(cmds, func(c string) bool { return strings.HasPrefix(c, "mkdir -p -m 0700 ") })
		if i < 0 {
			t.Fatalf("no mkdir command for %s", dir)
		}
		// The failure marker goes to /run/cluster-api on a machine; here under root.
		return strings.ReplaceAll(cmds[i], sentinelDir, filepath.Join(root, "run"))
	}
	if out, err := exec.Command("sh", "-c", command(dir)).CombinedOutput(); err != nil {
		t.Fatalf("the command failed: %v\n%s", err, out)
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("snapshot folder %s: %v, %v; want a directory with mode 0700", dir, fi, err)
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", "-c", command(dir)).CombinedOutput(); err != nil {
		t.Fatalf("the command failed on an existing folder: %v\n%s", err, out)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o750 {
		t.Errorf("an existing folder's mode changed to %v", fi.Mode().Perm())
	}

	file := filepath.Join(root, "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sh", "-c", command(file)+"\necho went on").CombinedOutput()
	if err == nil || strings.Contains(string(out), "went on") {
		t.Fatalf("a path that is a file did not stop the bootstrap: %v\n%s", err, out)
	}
	marker, _ := os.ReadFile(filepath.Join(root, "run", "bootstrap-failed"))
	if !strings.Contains(string(marker), "snapshots.directory") {
		t.Errorf("failure marker = %q, want it to name snapshots.directory", marker)
	}
}

// renderedCommands are the plan's commands as the machine runs them, from either
// format: cloud-init's runcmd, or the lines of Ignition's bootstrap script.
func renderedCommands(t *testing.T, in Input) []string {
	t.Helper()
	out := render(t, in)
	if in.Spec.Format == bootstrapv1.Ignition {
		return strings.Split(strings.TrimSuffix(parseIgnition(t, out).commands(t), "\n"), "\n")
	}
	return parse(t, out).RunCmd
}
