package host

import (
	"embed"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

//go:embed scripts/*.sh
var scripts embed.FS

// Bridge and addresses: every machine is on one bridge, the host is .1 and serves the
// load balancers there.
const (
	BridgeName   = "rk3s0"
	netnsPrefix  = "rk3s-"
	vethPrefix   = "rk3sv"
	subnetPrefix = "10.77.0."
	HostAddress  = subnetPrefix + "1"
	prefixLength = 24
	firstMachine = 2
	lastMachine  = 254
)

// Options say where the layer keeps its state and what it puts in every machine.
type Options struct {
	// Dir holds the machines' folders and the saved kernel settings.
	Dir string
	// Root is the Debian root machines boot (hack/realk3s/build-node-root.sh).
	Root string
	// Supervisor is the minisystemd binary (the machines' systemd and systemctl).
	Supervisor string
	// InstallScript is k3s's install.sh, put at /opt/install.sh in every machine.
	InstallScript string
	// Images are image tarballs every machine's k3s imports at start (no registry
	// is reachable): the pause image, the scenarios' workload.
	Images []string
}

// Layer is the running set of machines.
type Layer struct {
	opts     Options
	mu       sync.Mutex
	machines map[string]*Machine
}

// Setup cleans up what a run that died left, records the kernel settings, and
// makes the bridge.
func Setup(opts Options) (*Layer, error) {
	for _, f := range []string{opts.Root, opts.Supervisor, opts.InstallScript} {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("the layer needs %s: %w", f, err)
		}
	}
	if err := Cleanup(opts.Dir); err != nil {
		return nil, fmt.Errorf("cleaning up an earlier run: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(opts.Dir, "machines"), 0o700); err != nil {
		return nil, err
	}
	if err := saveKernelSettings(opts.Dir); err != nil {
		return nil, err
	}
	for _, args := range [][]string{
		{"link", "add", BridgeName, "type", "bridge"},
		{"addr", "add", fmt.Sprintf("%s/%d", HostAddress, prefixLength), "dev", BridgeName},
		{"link", "set", BridgeName, "up"},
	} {
		if err := ip(args...); err != nil {
			return nil, errors.Join(err, Cleanup(opts.Dir))
		}
	}
	return &Layer{opts: opts, machines: map[string]*Machine{}}, nil
}

// Teardown stops every machine, removes the bridge and puts the kernel settings back.
func (l *Layer) Teardown() error {
	l.mu.Lock()
	l.machines = map[string]*Machine{}
	l.mu.Unlock()
	return Cleanup(l.opts.Dir)
}

// Cleanup removes everything a layer made under dir, by PID and by name: the
// machines' processes, their cgroups, network namespaces and files, the bridge; then
// it puts the kernel settings back. It is safe on a clean host.
func Cleanup(dir string) error {
	var errs []error
	entries, _ := os.ReadDir(filepath.Join(dir, "machines"))
	for _, e := range entries {
		errs = append(errs, stopMachine(dir, e.Name()))
	}
	// Namespaces and cgroups of machines whose folder is gone.
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], netnsPrefix) {
				errs = append(errs, ip("netns", "del", f[0]))
			}
		}
	}
	errs = append(errs, removeCgroups(""))
	if _, err := net.InterfaceByName(BridgeName); err == nil {
		errs = append(errs, ip("link", "del", BridgeName))
	}
	errs = append(errs, RestoreKernelSettings(dir))
	return errors.Join(errs...)
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}
