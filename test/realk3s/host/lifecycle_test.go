package host

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capk3s/capk3s/test/realk3s/minisystemd"
)

// TestMachineLifecycle boots a machine on test/bootos's bookworm root (the real-k3s
// root adds packages, not behaviour) with a cloud-config, checks that it ran in its
// own network, UTS and cgroup namespaces with the seed's host name, then stops it and
// checks that nothing is left on the host and the kernel settings are back.
func TestMachineLifecycle(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: namespaces, mounts and a bridge")
	}
	roots := os.Getenv("CAPK3S_ROOTS")
	if roots == "" {
		roots = filepath.Join(os.Getenv("HOME"), ".cache", "capk3s", "roots")
	}
	root := filepath.Join(roots, "bookworm")
	if _, err := os.Stat(filepath.Join(root, ".complete")); err != nil {
		t.Skipf("no bookworm root at %s (make tools builds it as root)", root)
	}
	dir := t.TempDir()
	supervisor := filepath.Join(dir, "minisystemd")
	if err := minisystemd.Build(context.Background(), supervisor); err != nil {
		t.Fatal(err)
	}
	stand := filepath.Join(dir, "stand-in")
	if err := os.WriteFile(stand, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	settings, err := KernelSettings()
	if err != nil {
		t.Fatal(err)
	}
	l, err := Setup(Options{Dir: filepath.Join(dir, "layer"), Root: root, Supervisor: supervisor, InstallScript: stand, Images: []string{stand}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Teardown() })
	userData := `#cloud-config
runcmd:
  - hostname > /root/hostname
  - ip -4 -o addr show eth0 > /root/addr
  - cat /proc/self/cgroup > /root/cgroup
  - systemctl is-active minisystemd-none; echo "is-active $?" > /root/systemctl
`
	m, err := l.Start(MachineSpec{Name: "lifecycle-0", InstanceID: "iid-1", UserData: []byte(userData), K3sBinary: stand})
	if err != nil {
		t.Fatal(err)
	}
	if m.Address != HostAddress[:len(HostAddress)-1]+"2" {
		t.Errorf("first machine's address %s, want .2", m.Address)
	}
	status := filepath.Join(m.Dir(), "upper", "var", "log", "realk3s", "cloud-init-status")
	deadline := time.Now().Add(3 * time.Minute)
	for {
		// boot.sh writes cloud-init's status, then the line with its exit code.
		if b, err := os.ReadFile(status); err == nil && strings.Contains(string(b), "exit ") {
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(m.Dir(), "console.log"))
			t.Fatalf("cloud-init did not finish; console:\n%s", b)
		}
		time.Sleep(time.Second)
	}
	read := func(path string) string {
		out, err := l.Exec(m.Name, "cat", path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	if got := read("/root/hostname"); got != "lifecycle-0" {
		t.Errorf("host name %q, want the seed's lifecycle-0", got)
	}
	if got := read("/root/addr"); !strings.Contains(got, m.Address+"/24") {
		t.Errorf("eth0: %q, want %s/24", got, m.Address)
	}
	// In its cgroup namespace the machine's own cgroup is the root.
	for _, line := range strings.Split(read("/root/cgroup"), "\n") {
		if !strings.HasSuffix(line, ":/") {
			t.Errorf("cgroup line %q: the machine sees more than its own cgroup", line)
		}
	}
	if got := read("/root/systemctl"); got != "is-active 3" {
		t.Errorf("systemctl is-active of an unknown unit: %q, want the supervisor's exit 3", got)
	}
	if b, err := os.ReadFile(status); err != nil || !strings.Contains(string(b), "done") {
		t.Errorf("cloud-init status: %s %v", b, err)
	}
	// The kubelet changes these; the layer must put them back.
	if err := os.WriteFile("/proc/sys/vm/overcommit_memory", []byte(flip(settings["vm/overcommit_memory"])), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.Stop(m.Name); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{m.Dir(), "/run/netns/" + netnsPrefix + m.Name, "/sys/fs/cgroup/memory/" + cgroupParent + "/" + m.Name} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is left after Stop", p)
		}
	}
	if err := l.Teardown(); err != nil {
		t.Fatal(err)
	}
	after, err := KernelSettings()
	if err != nil {
		t.Fatal(err)
	}
	if after["vm/overcommit_memory"] != settings["vm/overcommit_memory"] {
		t.Errorf("vm.overcommit_memory %s after Teardown, want %s back", after["vm/overcommit_memory"], settings["vm/overcommit_memory"])
	}
	if _, err := os.Stat("/sys/class/net/" + BridgeName); err == nil {
		t.Errorf("bridge %s is left after Teardown", BridgeName)
	}
}

func flip(v string) string {
	if v == "1" {
		return "0"
	}
	return "1"
}
