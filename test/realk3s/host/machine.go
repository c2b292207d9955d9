package host

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MachineSpec is what a machine boots with.
type MachineSpec struct {
	// Name is the machine's name on the host and its host name (a cloud's metadata
	// service hands cloud-init the instance's name the same way).
	Name string
	// InstanceID is cloud-init's instance-id.
	InstanceID string
	// UserData is the bootstrap data, given to cloud-init as NoCloud's user-data.
	UserData []byte
	// K3sBinary is the k3s binary the machine's image carries at /usr/local/bin/k3s.
	K3sBinary string
	// Files are more files the machine's image carries, by absolute path: what a
	// scenario puts there behind capk3s's back.
	Files map[string][]byte
}

// Machine is a running machine.
type Machine struct {
	Name    string
	Address string
	dir     string
}

// Dir is the machine's folder on the host; its root's writes are under upper/.
func (m *Machine) Dir() string { return m.dir }

// Start makes and boots a machine; a machine of that name that runs already is
// returned as it is.
func (l *Layer) Start(spec MachineSpec) (*Machine, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m, ok := l.machines[spec.Name]; ok {
		return m, nil
	}
	if !validName(spec.Name) {
		return nil, fmt.Errorf("machine name %q: want 1-63 lowercase letters, digits and '-'", spec.Name)
	}
	n, err := l.freeAddress()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(l.opts.Dir, "machines", spec.Name)
	m := &Machine{Name: spec.Name, Address: subnetPrefix + strconv.Itoa(n), dir: dir}
	if err := l.prepare(m, spec, n); err != nil {
		return nil, errors.Join(err, stopMachine(l.opts.Dir, spec.Name))
	}
	if err := l.boot(m); err != nil {
		return nil, errors.Join(err, stopMachine(l.opts.Dir, spec.Name))
	}
	l.machines[spec.Name] = m
	return m, nil
}

// Stop kills a machine at once, as a cloud terminates an instance, and removes
// everything it had on the host.
func (l *Layer) Stop(name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.machines, name)
	return stopMachine(l.opts.Dir, name)
}

// Machine returns a running machine by name.
func (l *Layer) Machine(name string) (*Machine, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m, ok := l.machines[name]
	return m, ok
}

// Exec runs a command inside a running machine (all of its namespaces and its root)
// and returns what it printed.
func (l *Layer) Exec(name string, args ...string) (string, error) {
	pid, err := machineInit(l.opts.Dir, name)
	if err != nil {
		return "", err
	}
	cmd := exec.Command("nsenter", append([]string{"-t", strconv.Itoa(pid), "-m", "-u", "-i", "-n", "-p", "-C", "-r", "-w", "--"}, args...)...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s on %s: %w: %s", strings.Join(args, " "), name, err, out)
	}
	return string(out), nil
}

func validName(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// freeAddress is the lowest host number no machine folder holds.
func (l *Layer) freeAddress() (int, error) {
	used := map[int]bool{}
	entries, _ := os.ReadDir(filepath.Join(l.opts.Dir, "machines"))
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(l.opts.Dir, "machines", e.Name(), "host-number"))
		if n, convErr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && convErr == nil {
			used[n] = true
		}
	}
	for n := firstMachine; n <= lastMachine; n++ {
		if !used[n] {
			return n, nil
		}
	}
	return 0, errors.New("no free address on the bridge")
}

// boot makes the machine's network namespace on the bridge and starts its first
// process, which enters the other namespaces (scripts/stage1.sh).
func (l *Layer) boot(m *Machine) error {
	n := strings.TrimPrefix(m.Address, subnetPrefix)
	ns, veth := netnsPrefix+m.Name, vethPrefix+n
	for _, args := range [][]string{
		{"netns", "add", ns},
		{"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"link", "set", veth, "master", BridgeName, "up"},
		{"-n", ns, "addr", "add", fmt.Sprintf("%s/%d", m.Address, prefixLength), "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "route", "add", "default", "via", HostAddress},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	console, err := os.OpenFile(filepath.Join(m.dir, "console.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = console.Close() }()
	cmd := exec.Command("nsenter", "--net=/run/netns/"+ns, "--", "/bin/sh", filepath.Join(m.dir, "stage1.sh"), m.Name, m.dir, l.opts.Root)
	cmd.Stdout, cmd.Stderr = console, console
	// A machine starts with an environment of its own, not the tests': k3s's
	// install.sh hands every K3S_* variable it sees on to k3s.
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8"}
	// Its own process group: a Ctrl-C to the tests does not reach the machines;
	// Cleanup stops them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting machine %s: %w", m.Name, err)
	}
	go func() { _ = cmd.Wait() }()
	return os.WriteFile(filepath.Join(m.dir, "pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
}

// stopMachine kills the machine's first process (whose death kills every process of
// the machine's PID namespace), then removes its cgroups, network namespace and
// folder.
func stopMachine(dir, name string) error {
	mdir := filepath.Join(dir, "machines", name)
	var errs []error
	if pid, ok := machinePID(mdir); ok {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for i := 0; i < 100 && processAlive(pid, mdir); i++ {
			time.Sleep(100 * time.Millisecond)
		}
		if processAlive(pid, mdir) {
			errs = append(errs, fmt.Errorf("machine %s (pid %d) did not stop", name, pid))
		}
	}
	errs = append(errs, removeCgroups(name))
	if _, err := os.Stat("/run/netns/" + netnsPrefix + name); err == nil {
		errs = append(errs, ip("netns", "del", netnsPrefix+name))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return os.RemoveAll(mdir)
}

// machinePID is the PID recorded for the machine's first process.
func machinePID(mdir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(mdir, "pid"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil && pid > 0
}

// processAlive says whether pid is still the machine's first process: a PID is
// reused once its process is gone, so its command line must name the machine's
// folder.
func processAlive(pid int, mdir string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(b), mdir)
}

// machineInit is the host PID of the machine's PID 1 (the supervisor): the only
// child of the recorded first process.
func machineInit(dir, name string) (int, error) {
	mdir := filepath.Join(dir, "machines", name)
	pid, ok := machinePID(mdir)
	if !ok || !processAlive(pid, mdir) {
		return 0, fmt.Errorf("machine %s is not running", name)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("machine %s has no first process yet", name)
	}
	return strconv.Atoi(f[0])
}

// Machines lists the running machines.
func (l *Layer) Machines() []*Machine {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*Machine, 0, len(l.machines))
	for _, m := range l.machines {
		out = append(out, m)
	}
	return out
}
