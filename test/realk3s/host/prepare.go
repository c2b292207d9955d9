package host

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cloudConfig is cloud-init's own configuration in every machine: the NoCloud seed
// only, and no network configuration (the layer configured eth0 already, as a
// cloud's network would be there before the instance boots).
const cloudConfig = "datasource_list: [NoCloud, None]\nnetwork: {config: disabled}\nlocale: C.UTF-8\n"

// containerdDropIn is what the machines' image adds to k3s's containerd
// configuration (k3s imports agent/etc/containerd/config-v3.toml.d/*.toml, v1.36's
// pkg/agent/templates/templates.go): this host does not give root CAP_SYS_RESOURCE,
// so runc cannot lower a container's oom_score_adj, as in a user namespace, where
// k3s sets the same option itself.
const containerdDropIn = "version = 3\n\n[plugins.'io.containerd.cri.v1.runtime']\n  restrict_oom_score_adj = true\n"

// prepare lays the machine's folder out: its scripts, and its root's first writes:
// the seed, cloud-init's configuration, the supervisor (also as systemctl), the k3s
// binary and install script of the image, and the images k3s imports at start.
func (l *Layer) prepare(m *Machine, spec MachineSpec, n int) error {
	upper := filepath.Join(m.dir, "upper")
	for _, d := range []string{"work", "merged", "rancher/k3s/agent/images", "rancher/k3s/agent/etc/containerd/config-v3.toml.d", "upper/seed", "upper/etc/cloud/cloud.cfg.d",
		"upper/usr/local/sbin", "upper/usr/local/bin", "upper/usr/bin", "upper/opt"} {
		if err := os.MkdirAll(filepath.Join(m.dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(m.dir, "host-number"), []byte(strconv.Itoa(n)), 0o600); err != nil {
		return err
	}
	for _, s := range []string{"stage1.sh", "stage2.sh"} {
		if err := copyEmbedded("scripts/"+s, filepath.Join(m.dir, s)); err != nil {
			return err
		}
	}
	if err := copyEmbedded("scripts/boot.sh", filepath.Join(upper, "seed", "boot.sh")); err != nil {
		return err
	}
	meta := fmt.Sprintf("instance-id: %s\nlocal-hostname: %s\n", spec.InstanceID, spec.Name)
	resolv, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return err
	}
	for path, content := range map[string][]byte{
		"seed/user-data":                       spec.UserData,
		"seed/meta-data":                       []byte(meta),
		"etc/cloud/cloud.cfg.d/99-realk3s.cfg": []byte(cloudConfig),
		"etc/resolv.conf":                      resolv,
	} {
		if err := os.WriteFile(filepath.Join(upper, path), content, 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(m.dir, "rancher/k3s/agent/etc/containerd/config-v3.toml.d/realk3s-host.toml"), []byte(containerdDropIn), 0o644); err != nil {
		return err
	}
	for path, content := range spec.Files {
		if !filepath.IsAbs(path) || strings.Contains(path, "..") {
			return fmt.Errorf("image file %q: want an absolute path without \"..\"", path)
		}
		to := filepath.Join(upper, path)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(to, content, 0o600); err != nil {
			return err
		}
	}
	for _, f := range []struct{ from, to string }{
		{l.opts.Supervisor, "upper/usr/local/sbin/minisystemd"},
		// Debian's own systemctl (/bin is a link to usr/bin) would talk to a systemd
		// that does not run; /usr/local/bin comes first on PATH.
		{l.opts.Supervisor, "upper/usr/bin/systemctl"},
		{l.opts.Supervisor, "upper/usr/local/bin/systemctl"},
		{spec.K3sBinary, "upper/usr/local/bin/k3s"},
		{l.opts.InstallScript, "upper/opt/install.sh"},
	} {
		if err := linkOrCopy(f.from, filepath.Join(m.dir, f.to), 0o755); err != nil {
			return err
		}
	}
	for _, img := range l.opts.Images {
		if err := linkOrCopy(img, filepath.Join(m.dir, "rancher/k3s/agent/images", filepath.Base(img)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func copyEmbedded(name, to string) error {
	b, err := fs.ReadFile(scripts, name)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

// linkOrCopy hard-links a large file (the k3s binary) into a machine, or copies it
// when the two are on different file systems.
func linkOrCopy(from, to string, mode os.FileMode) error {
	if err := os.Link(from, to); err == nil {
		return nil
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}
