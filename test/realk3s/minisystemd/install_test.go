package minisystemd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Install on a merged-/usr root that ships systemd's systemctl: systemctl
// becomes minisystemd under both /usr/bin and /bin, and the binary answers
// as systemctl there.
func TestInstall(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("usr/bin", filepath.Join(root, "bin")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "usr/bin/systemctl"), 0o755, "systemd's own\n")
	if err := Install(root, binPath); err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{"usr/bin/systemctl", "bin/systemctl", "usr/local/bin/systemctl"} {
		target, err := os.Readlink(filepath.Join(root, link))
		if err != nil || target != BinaryPath {
			t.Errorf("%s -> %q, %v; want %s", link, target, err, BinaryPath)
		}
	}
	installed := filepath.Join(root, BinaryPath)
	// Run the installed copy as systemctl (outside a chroot: through a
	// symlink of the same name next to it).
	alias := filepath.Join(t.TempDir(), "systemctl")
	if err := os.Symlink(installed, alias); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(alias, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "minisystemd") {
		t.Errorf("installed systemctl --version: %q, %v", out, err)
	}
	// Installing again (a machine restarted on the same upper layer) works.
	if err := Install(root, binPath); err != nil {
		t.Errorf("second install: %v", err)
	}
	if got := InitCommand("/bin/sh", "/seed/boot.sh"); strings.Join(got, " ") != BinaryPath+" init -- /bin/sh /seed/boot.sh" {
		t.Errorf("InitCommand = %q", got)
	}
}
