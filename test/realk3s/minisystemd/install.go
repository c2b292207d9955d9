package minisystemd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Paths of the binary and its systemctl links inside a machine's root.
const (
	BinaryPath = "/usr/local/sbin/minisystemd"
)

// systemctlLinks are where install.sh and capk3s look for systemctl
// ([ -x /bin/systemctl ] and PATH); the Debian roots ship systemd's own
// systemctl at /usr/bin/systemctl, which is replaced.
var systemctlLinks = []string{"/usr/bin/systemctl", "/bin/systemctl", "/usr/local/bin/systemctl"}

// Install puts the binary at BinaryPath in the machine root and makes
// systemctl there point at it, replacing systemd's. It writes only inside
// root (meant for the machine's overlay upper layer, through the merged
// mount) and never follows an absolute symlink of the root: a /bin that links
// to usr/bin (merged /usr) is left to its target's link.
func Install(root, binary string) error {
	dst := filepath.Join(root, BinaryPath)
	if err := copyFile(binary, dst, 0o755); err != nil {
		return err
	}
	for _, link := range systemctlLinks {
		dir := filepath.Dir(link)
		if st, err := os.Lstat(filepath.Join(root, dir)); err == nil && st.Mode()&fs.ModeSymlink != 0 {
			continue // merged /usr: the same directory as its target
		}
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			return fmt.Errorf("installing systemctl: %w", err)
		}
		p := filepath.Join(root, link)
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("replacing %s: %w", link, err)
		}
		if err := os.Symlink(BinaryPath, p); err != nil {
			return fmt.Errorf("installing %s: %w", link, err)
		}
	}
	return nil
}

// InitCommand is the command line to start a machine with, inside its root:
// minisystemd as init, running boot once.
func InitCommand(boot ...string) []string {
	return append([]string{BinaryPath, "init", "--"}, boot...)
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("installing minisystemd: %w", err)
	}
	defer func() { _ = in.Close() }()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("installing minisystemd: %w", err)
	}
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("installing minisystemd: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("installing minisystemd: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("installing minisystemd: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("installing minisystemd: %w", err)
	}
	return nil
}
