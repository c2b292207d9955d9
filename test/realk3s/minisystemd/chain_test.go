package minisystemd

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The sequence capk3s's bootstrap data and k3s's install.sh run, with a
// stand-in for the k3s binary: a unit of the shape install.sh writes, an env
// file as `export` prints it, enable by path, daemon-reload, restart (blocks
// until READY=1), the is-active sentinel; then an in-place restart that
// leaves the "shims" of KillMode=process running, and a stop.
func TestInstallShapedChain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	units := filepath.Join(dir, "units")
	if err := os.MkdirAll(units, 0o755); err != nil {
		t.Fatal(err)
	}
	fakeK3s := filepath.Join(dir, "k3s")
	write(t, fakeK3s, 0o755, fmt.Sprintf(`#!/bin/sh
echo "args: $*"
echo "token=$K3S_TOKEN"
ulimit -n
sleep 1000 &
echo $! >> %[1]s/shims
echo $$ > %[1]s/main.pid
sleep 0.5
%[2]s notify READY=1
exec sleep 1000
`, dir, binPath))
	write(t, filepath.Join(units, "k3s.service"), 0o644, fmt.Sprintf(`[Unit]
Description=Lightweight Kubernetes
Wants=network-online.target
After=network-online.target

[Install]
WantedBy=multi-user.target

[Service]
Type=notify
EnvironmentFile=-/etc/default/%%N
EnvironmentFile=-/etc/sysconfig/%%N
EnvironmentFile=-%[3]s/k3s.service.env
KillMode=process
Delegate=yes
User=root
LimitNOFILE=1048576
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
TimeoutStartSec=0
Restart=always
RestartSec=5s
ExecStartPre=-%[1]s/no/such/modprobe br_netfilter
ExecStart=%[2]s \
    server \
	'--config' \
	'/etc/rancher/k3s/config.yaml' \
	'--node-label=it'\''s=b c' \

`, dir, fakeK3s, units))
	write(t, filepath.Join(units, "k3s.service.env"), 0o600, "K3S_TOKEN='K10abc::server:s3cr3t'\n")
	// What the bootstrap data runs.
	boot := fmt.Sprintf(`set -e
PATH=%[1]s:$PATH
systemctl enable %[2]s/k3s.service >/dev/null
systemctl daemon-reload >/dev/null
systemctl restart k3s
test -s %[3]s/main.pid
systemctl is-active --quiet k3s
echo sentinel > %[3]s/sentinel
`, filepath.Dir(systemctlPath), units, dir)
	m := startMachineIn(t, dir, "/bin/sh", "-c", boot)
	m.waitFor("boot.exit", 10*time.Second, func() bool { return readFile(filepath.Join(m.cfg.LogDir, "boot.exit")) != "" })
	if code := readFile(filepath.Join(m.cfg.LogDir, "boot.exit")); code != "0\n" {
		t.Fatalf("boot exited %q\nboot.log:\n%s\nlog:\n%s", code, m.readLog("boot.log"), m.readLog("minisystemd.log"))
	}
	if readFile(m.path("sentinel")) != "sentinel\n" {
		t.Fatalf("sentinel not written")
	}
	firstMain := m.readPid("main.pid")
	shims := func() []int {
		var pids []int
		for _, f := range strings.Fields(readFile(m.path("shims"))) {
			pid, _ := strconv.Atoi(f)
			pids = append(pids, pid)
			killAtEnd(t, pid)
		}
		return pids
	}
	// LimitNOFILE=1048576, or as much as the hard limit allows where the
	// tests lack CAP_SYS_RESOURCE (as the machines do).
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	wantNofile := uint64(1048576)
	if !canRaiseNofile(wantNofile) {
		wantNofile = min(wantNofile, lim.Max)
	}
	out := m.readLog("k3s.log")
	for _, want := range []string{
		"args: server --config /etc/rancher/k3s/config.yaml --node-label=it's=b c\n",
		"token=K10abc::server:s3cr3t\n", fmt.Sprintf("\n%d\n", wantNofile),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("k3s.log lacks %q:\n%s", want, out)
		}
	}

	// capk3s's in-place restart.
	m.mustSystemctl(0, "restart", "k3s")
	if second := m.readPid("main.pid"); second == firstMain || isAlive(firstMain) {
		t.Errorf("restart kept main process %d (now %d)", firstMain, second)
	}
	if s := shims(); len(s) != 2 || !isAlive(s[0]) {
		t.Errorf("shims %v: the first run's shim must survive a restart with KillMode=process", s)
	}
	m.mustSystemctl(0, "is-enabled", "k3s")

	// k3s-killall.sh's stop, then uninstall's disable and reset-failed.
	main := m.readPid("main.pid")
	m.mustSystemctl(0, "stop", "k3s.service")
	if isAlive(main) {
		t.Errorf("main process %d survived stop", main)
	}
	for _, pid := range shims() {
		if !isAlive(pid) {
			t.Errorf("shim %d was killed by stop with KillMode=process", pid)
		}
	}
	m.mustSystemctl(3, "is-active", "k3s")
	m.mustSystemctl(0, "disable", "k3s")
	m.mustSystemctl(0, "reset-failed", "k3s")
	m.mustSystemctl(0, "daemon-reload")
}

func write(t *testing.T, path string, mode os.FileMode, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}

// canRaiseNofile reports whether a child may set RLIMIT_NOFILE to n (root
// with CAP_SYS_RESOURCE, or a hard limit already that high).
func canRaiseNofile(n uint64) bool {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return false
	}
	if lim.Max >= n {
		return true
	}
	status := readFile("/proc/self/status")
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<24) != 0 // CAP_SYS_RESOURCE
		}
	}
	return false
}
