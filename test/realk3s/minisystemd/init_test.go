package minisystemd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Exit statuses and messages of the verbs around unknown units and verbs.
func TestVerbsExitStatuses(t *testing.T) {
	t.Parallel()
	m := startMachine(t)
	if out := m.mustSystemctl(3, "is-active", "nosuch"); strings.TrimSpace(out) != StateInactive {
		t.Errorf("is-active of an unknown unit printed %q", out)
	}
	if _, errOut, code := m.systemctl("frobnicate", "k3s"); code != 1 || !strings.Contains(errOut, "Unknown command verb 'frobnicate'") {
		t.Errorf("unknown verb: exit %d stderr %q", code, errOut)
	}
	if !strings.Contains(m.readLog("minisystemd.log"), `unknown verb "frobnicate" refused`) {
		t.Errorf("unknown verb not logged")
	}
	m.mustSystemctl(1, "start")
	m.mustSystemctl(5, "start", "nosuch")
	m.mustSystemctl(5, "restart", "nosuch.service")
	m.mustSystemctl(5, "stop", "nosuch")
	m.mustSystemctl(4, "status", "nosuch")
	m.mustSystemctl(1, "is-enabled", "nosuch")
	m.mustSystemctl(1, "kill", "nosuch")
	m.mustSystemctl(1, "disable", "nosuch")

	path := m.writeUnit("svc.service", fmt.Sprintf("[Service]\nExecStart=/bin/sh -c 'trap \"echo got-usr1 > %s\" USR1; echo $$$$ > %s; while :; do sleep 0.05; done'\n[Install]\nWantedBy=multi-user.target\n",
		m.path("usr1"), m.path("main.pid")))
	if out := m.mustSystemctl(1, "is-enabled", "svc"); strings.TrimSpace(out) != "disabled" {
		t.Errorf("is-enabled before enable: %q", out)
	}
	m.mustSystemctl(0, "enable", "--now", path)
	if _, err := os.Lstat(filepath.Join(m.cfg.UnitDir, "multi-user.target.wants", "svc.service")); err != nil {
		t.Errorf("enable made no wants link: %v", err)
	}
	m.mustSystemctl(0, "is-active", "svc")
	m.mustSystemctl(0, "is-enabled", "svc.service")
	m.readPid("main.pid")
	m.mustSystemctl(0, "kill", "-s", "USR1", "svc")
	m.waitFor("the USR1 trap", 5*time.Second, func() bool {
		_, err := os.Stat(m.path("usr1"))
		return err == nil
	})
	m.mustSystemctl(0, "disable", "--now", "svc")
	m.mustSystemctl(1, "is-enabled", "svc")
	m.mustSystemctl(3, "is-active", "svc")
	m.mustSystemctl(0, "try-restart", "svc")
	m.mustSystemctl(3, "is-active", "svc")
	m.mustSystemctl(1, "kill", "svc")
	m.mustSystemctl(0, "reset-failed")
}

// daemon-reload makes an edited unit file apply at the next start.
func TestDaemonReload(t *testing.T) {
	t.Parallel()
	m := startMachine(t)
	unit := "[Service]\nType=exec\nExecStart=/bin/sh -c 'echo %s > " + m.path("which") + "; exec sleep 1000'\n"
	m.writeUnit("svc.service", fmt.Sprintf(unit, "first"))
	m.mustSystemctl(0, "start", "svc")
	m.writeUnit("svc.service", fmt.Sprintf(unit, "second"))
	m.mustSystemctl(0, "restart", "svc")
	m.waitFor("first", 5*time.Second, func() bool { return readFile(m.path("which")) == "first\n" })
	m.mustSystemctl(0, "daemon-reload")
	m.mustSystemctl(0, "restart", "svc")
	m.waitFor("second", 5*time.Second, func() bool { return readFile(m.path("which")) == "second\n" })
}

func readFile(p string) string {
	data, _ := os.ReadFile(p)
	return string(data)
}

// The boot command runs once, logs to boot.log, its status lands in
// boot.exit, and init keeps running after it; a unit enabled in the root
// starts at boot.
func TestBootCommandAndEnabledUnits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	units := filepath.Join(dir, "units")
	if err := os.MkdirAll(filepath.Join(units, "multi-user.target.wants"), 0o755); err != nil {
		t.Fatal(err)
	}
	unitPath := filepath.Join(units, "early.service")
	if err := os.WriteFile(unitPath, []byte("[Service]\nExecStart=/bin/sleep 1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(unitPath, filepath.Join(units, "multi-user.target.wants", "early.service")); err != nil {
		t.Fatal(err)
	}
	// Enabled by the distribution, its file elsewhere: not started.
	if err := os.Symlink("/lib/systemd/system/getty@tty1.service", filepath.Join(units, "multi-user.target.wants", "getty@tty1.service")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "log"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "log", "boot.exit"), []byte("7\n"), 0o644); err != nil {
		t.Fatal(err) // left by an earlier boot: must not count
	}
	// An empty environment, as a machine may be started with: the boot
	// command still gets PATH and HOME.
	m := startMachineEnv(t, dir, []string{}, "/bin/sh", "-c", `sleep 0.3; echo "booting path=$PATH home=$HOME"; exit 7`)
	if readFile(filepath.Join(m.cfg.LogDir, "boot.exit")) != "" {
		t.Errorf("boot.exit of an earlier boot kept")
	}
	m.waitFor("boot.exit", 5*time.Second, func() bool { return readFile(filepath.Join(m.cfg.LogDir, "boot.exit")) == "7\n" })
	if !strings.Contains(m.readLog("boot.log"), "booting path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin home=/root") {
		t.Errorf("boot.log: %q", m.readLog("boot.log"))
	}
	m.waitFor("the enabled unit to be active", 5*time.Second, func() bool {
		_, _, code := m.systemctl("is-active", "early")
		return code == 0
	})
	// Signals that end a Go program by default must not end init.
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGQUIT} {
		if err := m.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	select {
	case <-m.exited:
		t.Fatalf("init exited after the boot command or a signal: %v", m.exitErr)
	default:
	}
	m.mustSystemctl(0, "is-active", "early")
	if log := m.readLog("minisystemd.log"); strings.Contains(log, "getty") {
		t.Errorf("a unit without a file in the unit directory was started at boot:\n%s", log)
	}
}

// SIGTERM to init stops every unit (the whole tree, per KillMode) and init
// exits 0.
func TestSIGTERMStopsUnitsAndExits(t *testing.T) {
	t.Parallel()
	m := startMachine(t)
	m.writeUnit("a.service", treeUnit(m, ""))
	m.writeUnit("b.service", notifyUnit(m, "0"))
	m.mustSystemctl(0, "start", "a")
	main, child := m.readPid("main.pid"), m.readPid("child.pid")
	killAtEnd(t, child)
	m.mustSystemctl(0, "start", "b")
	bMain := m.readPid("main.pid")
	killAtEnd(t, bMain)
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("init did not exit within 10 s of SIGTERM")
	}
	if m.exitErr != nil {
		t.Errorf("init exited with %v, want status 0", m.exitErr)
	}
	for _, pid := range []int{main, child, bMain} {
		if isAlive(pid) {
			t.Errorf("process %d still runs after init stopped", pid)
		}
	}
	if _, err := os.Stat(m.cfg.Socket); err == nil {
		t.Errorf("control socket left behind")
	}
}

// Orphans re-parent to init (child subreaper here, PID 1 in a machine) and
// are reaped: no zombie children remain.
func TestReapsOrphans(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "orphan.pid")
	// The inner shell starts a short sleep in the background and exits at
	// once, so the sleep is orphaned; it exits 0.5 s later.
	m := startMachineIn(t, dir, "/bin/sh", "-c",
		fmt.Sprintf("/bin/sh -c 'sleep 0.5 & echo $! > %s'; exec sleep 1000", pidFile))
	orphan := m.readPid("orphan.pid")
	initPid := m.cmd.Process.Pid
	m.waitFor("the orphan to re-parent to init", 3*time.Second, func() bool {
		p, ok := readProcStat(orphan)
		return ok && p.ppid == initPid
	})
	m.waitFor("the orphan to be reaped", 5*time.Second, func() bool {
		_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(orphan)))
		return os.IsNotExist(err)
	})
	for _, p := range allProcs() {
		if p.ppid == initPid && p.state == 'Z' {
			t.Errorf("zombie child %d of init", p.pid)
		}
	}
	if !strings.Contains(m.readLog("minisystemd.log"), fmt.Sprintf("reaped orphan %d", orphan)) {
		t.Errorf("the orphan's reaping was not logged")
	}
}

// As PID 1 of its own pid namespace (as in a machine), init reaps orphans
// and serves systemctl to clients outside the namespace.
func TestRunsAsPID1(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root for a pid namespace (unshare --pid)")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare not installed")
	}
	dir := t.TempDir()
	m := &machine{t: t, dir: dir, exited: make(chan struct{}), cfg: Config{
		Socket:  filepath.Join(dir, "run", "minisystemd.sock"),
		UnitDir: filepath.Join(dir, "units"),
		LogDir:  filepath.Join(dir, "log"),
	}}
	if err := os.MkdirAll(m.cfg.UnitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Two orphans that exit soon, then a look at the namespace's /proc.
	boot := fmt.Sprintf(`(sleep 0.2 &); (sleep 0.3 &); sleep 1.5
cat /proc/1/comm > %[1]s/pid1
for s in /proc/[0-9]*/stat; do read -r line < $s && case "$line" in *") Z "*) echo "$line";; esac; done > %[1]s/zombies
echo done > %[1]s/checked
exec sleep 1000`, dir)
	m.cmd = exec.Command(unshare, "--pid", "--fork", "--mount-proc", binPath, "init", "--", "/bin/sh", "-c", boot)
	m.cmd.Env = m.env()
	m.cmd.Stderr = os.Stderr
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { m.exitErr = m.cmd.Wait(); close(m.exited) }()
	var initPid int
	t.Cleanup(func() {
		if initPid != 0 {
			_ = syscall.Kill(initPid, syscall.SIGTERM)
		}
		select {
		case <-m.exited:
		case <-time.After(10 * time.Second):
			_ = m.cmd.Process.Kill()
			t.Errorf("init in the pid namespace did not exit on SIGTERM")
		}
	})
	m.waitFor("the checks inside the namespace", 10*time.Second, func() bool {
		return readFile(filepath.Join(dir, "checked")) == "done\n"
	})
	if got := readFile(filepath.Join(dir, "pid1")); got != "minisystemd\n" {
		t.Errorf("PID 1 of the namespace is %q, want minisystemd", got)
	}
	if z := readFile(filepath.Join(dir, "zombies")); z != "" {
		t.Errorf("zombies in the namespace:\n%s", z)
	}
	if n := strings.Count(m.readLog("minisystemd.log"), "reaped orphan"); n < 2 {
		t.Errorf("%d orphans reaped, want 2\n%s", n, m.readLog("minisystemd.log"))
	}
	m.writeUnit("svc.service", "[Service]\nExecStart=/bin/sleep 1000\n")
	m.mustSystemctl(0, "start", "svc")
	m.mustSystemctl(0, "is-active", "svc")
	// init is unshare's child in the host's pid namespace.
	children := readFile(fmt.Sprintf("/proc/%d/task/%d/children", m.cmd.Process.Pid, m.cmd.Process.Pid))
	if initPid, err = strconv.Atoi(strings.TrimSpace(children)); err != nil {
		t.Fatalf("finding init's host pid from %q: %v", children, err)
	}
	if err := syscall.Kill(initPid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("init did not exit on SIGTERM")
	}
	if m.exitErr != nil {
		t.Errorf("unshare/init exited with %v, want 0", m.exitErr)
	}
}
