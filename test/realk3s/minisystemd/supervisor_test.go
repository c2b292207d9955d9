package minisystemd

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// notifyUnit is a Type=notify service that writes its pid, waits delay,
// sends READY=1 with the minisystemd binary (as systemd-notify would) and
// then keeps running.
func notifyUnit(m *machine, delay string) string {
	return fmt.Sprintf(`[Unit]
Description=notify test service
[Service]
Type=notify
KillMode=process
TimeoutStartSec=0
Restart=always
RestartSec=5s
ExecStart=/bin/sh -c 'echo $$$$ > %s; sleep %s; %s notify READY=1 STATUS=up; exec sleep 1000'
[Install]
WantedBy=multi-user.target
`, m.path("main.pid"), delay, binPath)
}

// The install.sh sequence: enable by path, daemon-reload, restart, which
// blocks until READY=1; is-active reports activating meanwhile.
func TestNotifyRestartBlocksUntilReady(t *testing.T) {
	t.Parallel()
	m := startMachine(t)
	path := m.writeUnit("svc.service", notifyUnit(m, "1"))
	m.mustSystemctl(0, "enable", path)
	m.mustSystemctl(0, "daemon-reload")

	done := make(chan time.Duration, 1)
	start := time.Now()
	go func() {
		m.mustSystemctl(0, "restart", "svc")
		done <- time.Since(start)
	}()
	m.readPid("main.pid")
	if out, _, code := m.systemctl("is-active", "svc.service"); code != 3 || strings.TrimSpace(out) != StateActivating {
		t.Errorf("before READY=1: is-active = %q exit %d, want activating exit 3", out, code)
	}
	took := <-done
	if took < 900*time.Millisecond {
		t.Errorf("restart returned after %s, before the service sent READY=1 (1 s)", took)
	}
	if out, _, code := m.systemctl("is-active", "--quiet", "svc"); code != 0 || out != "" {
		t.Errorf("after READY=1: is-active --quiet printed %q exit %d, want nothing and 0", out, code)
	}
	status := m.mustSystemctl(0, "status", "svc")
	for _, want := range []string{"active (running)", "enabled", `Status: "up"`, "notify test service"} {
		if !strings.Contains(status, want) {
			t.Errorf("status lacks %q:\n%s", want, status)
		}
	}
	// start on an active unit does nothing: the main process stays.
	pid := m.readPid("main.pid")
	m.mustSystemctl(0, "start", "svc")
	if now := m.readPid("main.pid"); now != pid || !isAlive(pid) {
		t.Errorf("start on an active unit replaced main process %d with %d", pid, now)
	}
}

// A notify service that exits before READY=1 fails its start, as systemd's.
func TestNotifyExitBeforeReadyFailsStart(t *testing.T) {
	t.Parallel()
	m := startMachine(t)
	m.writeUnit("early.service", "[Service]\nType=notify\nExecStart=/bin/sh -c 'echo giving up; exit 2'\n")
	_, errOut, code := m.systemctl("start", "early")
	if code != 1 {
		t.Fatalf("start exit %d, want 1 (stderr %q)", code, errOut)
	}
	if !strings.Contains(errOut, "exited with status 2") {
		t.Errorf("stderr does not say why: %q", errOut)
	}
	if out, _, code := m.systemctl("is-active", "early"); code != 3 || strings.TrimSpace(out) != StateFailed {
		t.Errorf("is-active = %q exit %d, want failed exit 3", out, code)
	}
	m.mustSystemctl(0, "is-failed", "early")
	m.mustSystemctl(3, "status", "early")
	m.mustSystemctl(0, "reset-failed", "early")
	if out := m.mustSystemctl(3, "is-active", "early"); strings.TrimSpace(out) != StateInactive {
		t.Errorf("after reset-failed: %q, want inactive", out)
	}
	if !strings.Contains(m.readLog("early.log"), "giving up") {
		t.Errorf("service output missing from early.log: %q", m.readLog("early.log"))
	}
}

// Restart=always starts the service again RestartSec after it exits, and a
// stop ends the cycle.
func TestRestartAlwaysAfterRestartSec(t *testing.T) {
	t.Parallel()
	m := startMachine(t)
	runs := m.path("runs")
	m.writeUnit("flappy.service", fmt.Sprintf(`[Service]
Type=exec
Restart=always
RestartSec=400ms
ExecStart=/bin/sh -c 'cut -d" " -f1 /proc/uptime >> %s; sleep 0.1; exit 0'
`, runs))
	m.mustSystemctl(0, "start", "flappy")
	var times []time.Duration
	m.waitFor("three runs", 10*time.Second, func() bool {
		data, _ := os.ReadFile(runs)
		times = parseTimes(t, string(data))
		return len(times) >= 3
	})
	for i := 1; i < len(times); i++ {
		if gap := times[i] - times[i-1]; gap < 480*time.Millisecond {
			t.Errorf("run %d started %s after the previous one; RestartSec=400ms plus a 100ms run", i, gap)
		}
	}
	if !strings.Contains(m.readLog("minisystemd.log"), "scheduling restart in 400ms") {
		t.Errorf("restart not logged")
	}
	m.mustSystemctl(0, "stop", "flappy")
	data, _ := os.ReadFile(runs)
	time.Sleep(800 * time.Millisecond)
	after, _ := os.ReadFile(runs)
	if len(after) != len(data) {
		t.Errorf("the service ran again after stop")
	}
	m.mustSystemctl(3, "is-active", "flappy")
}

// parseTimes reads the /proc/uptime stamps (seconds, 10 ms resolution).
func parseTimes(t *testing.T, s string) []time.Duration {
	var out []time.Duration
	for _, f := range strings.Fields(s) {
		sec, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("bad uptime %q: %v", f, err)
		}
		out = append(out, time.Duration(sec*float64(time.Second)))
	}
	return out
}

// Restart=on-failure restarts after a failure and not after a clean exit.
func TestRestartOnFailure(t *testing.T) {
	t.Parallel()
	m := startMachine(t)
	runs := m.path("runs")
	// Fails on its first run, succeeds on the second.
	m.writeUnit("once.service", fmt.Sprintf(`[Service]
Restart=on-failure
RestartSec=100ms
ExecStart=/bin/sh -c 'echo run >> %[1]s; [ $(wc -l < %[1]s) -ge 2 ]'
`, runs))
	m.mustSystemctl(0, "start", "once")
	m.waitFor("inactive after a clean second run", 5*time.Second, func() bool {
		out, _, _ := m.systemctl("is-active", "once")
		return strings.TrimSpace(out) == StateInactive
	})
	time.Sleep(400 * time.Millisecond)
	if data, _ := os.ReadFile(runs); strings.Count(string(data), "run") != 2 {
		t.Errorf("runs = %q, want exactly 2", data)
	}
}

// KillMode=process stops only the main process: a child it spawned
// survives, as k3s's containerd shims must.
func TestStopKillModeProcessLeavesChildren(t *testing.T) {
	t.Parallel()
	m := startMachine(t)
	m.writeUnit("parent.service", treeUnit(m, "KillMode=process"))
	m.mustSystemctl(0, "start", "parent")
	main, child := m.readPid("main.pid"), m.readPid("child.pid")
	killAtEnd(t, child)
	m.mustSystemctl(0, "stop", "parent")
	if isAlive(main) {
		t.Errorf("main process %d survived stop", main)
	}
	if !isAlive(child) {
		t.Errorf("child %d was killed although KillMode=process", child)
	}
	m.mustSystemctl(3, "is-active", "parent")
}

// The default KillMode (control-group) stops the whole tree.
func TestStopControlGroupKillsTree(t *testing.T) {
	t.Parallel()
	m := startMachine(t)
	m.writeUnit("parent.service", treeUnit(m, ""))
	m.mustSystemctl(0, "start", "parent")
	main, child := m.readPid("main.pid"), m.readPid("child.pid")
	killAtEnd(t, child)
	m.mustSystemctl(0, "stop", "parent")
	m.waitFor("the tree to be gone", 3*time.Second, func() bool {
		return !isAlive(main) && !isAlive(child)
	})
}

// treeUnit starts a child (that ignores nothing) and then becomes sleep.
func treeUnit(m *machine, killMode string) string {
	return fmt.Sprintf(`[Service]
Type=exec
%s
ExecStart=/bin/sh -c 'sleep 1000 & echo $! > %s; echo $$$$ > %s; exec sleep 1000'
`, killMode, m.path("child.pid"), m.path("main.pid"))
}

// A stop that SIGTERM does not end escalates to SIGKILL after TimeoutStopSec.
func TestStopEscalatesToSIGKILL(t *testing.T) {
	t.Parallel()
	m := startMachine(t)
	m.writeUnit("stubborn.service", fmt.Sprintf(`[Service]
TimeoutStopSec=500ms
ExecStart=/bin/sh -c 'trap "" TERM; echo $$$$ > %s; while :; do sleep 0.05; done'
`, m.path("main.pid")))
	m.mustSystemctl(0, "start", "stubborn")
	main := m.readPid("main.pid")
	start := time.Now()
	m.mustSystemctl(0, "stop", "stubborn")
	if took := time.Since(start); took < 400*time.Millisecond {
		t.Errorf("stop took %s; SIGTERM is ignored, so it must wait for TimeoutStopSec", took)
	}
	if isAlive(main) {
		t.Errorf("main process %d survived SIGKILL", main)
	}
	if !strings.Contains(m.readLog("minisystemd.log"), "sending SIGKILL") {
		t.Errorf("escalation not logged")
	}
}

// EnvironmentFile= and Environment= reach the service; a missing optional
// file is fine, a missing required one fails the start.
func TestEnvironment(t *testing.T) {
	t.Parallel()
	m := startMachine(t)
	envFile := m.path("envsvc.env")
	if err := os.WriteFile(envFile, []byte("# settings\nK3S_TOKEN='se cret'\nK3S_URL=\"https://1.2.3.4:6443\"\nFROM_BOTH=file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m.writeUnit("envsvc.service", fmt.Sprintf(`[Service]
Type=exec
Environment="GREETING=hello world" FROM_BOTH=unit
EnvironmentFile=-%s/missing/%%N
EnvironmentFile=-%s/%%N.env
ExecStart=/bin/sh -c 'env > %s; pwd >> %s; exec sleep 1000'
`, m.dir, m.dir, m.path("env.out"), m.path("env.out")))
	m.mustSystemctl(0, "start", "envsvc")
	var env string
	m.waitFor("env.out", 5*time.Second, func() bool {
		data, _ := os.ReadFile(m.path("env.out"))
		env = string(data)
		return strings.Count(env, "\n") > 3 && strings.HasSuffix(env, "/\n")
	})
	for _, want := range []string{
		"K3S_TOKEN=se cret\n", "K3S_URL=https://1.2.3.4:6443\n", "GREETING=hello world\n",
		"FROM_BOTH=file\n", "HOME=/root\n",
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n",
	} {
		if !strings.Contains(env, want) {
			t.Errorf("service environment lacks %q:\n%s", want, env)
		}
	}
	if strings.Contains(env, "NOTIFY_SOCKET") || strings.Contains(env, EnvSocket) {
		t.Errorf("service environment leaks the supervisor's:\n%s", env)
	}

	m.writeUnit("strict.service", fmt.Sprintf("[Service]\nEnvironmentFile=%s/missing.env\nExecStart=/bin/sleep 1000\n", m.dir))
	m.mustSystemctl(1, "start", "strict")
	m.mustSystemctl(3, "is-active", "strict")
}

// ExecStartPre= failing fails the start unless it is marked with "-".
func TestExecStartPre(t *testing.T) {
	t.Parallel()
	m := startMachine(t)
	m.writeUnit("prefail.service", "[Service]\nExecStartPre=/bin/false\nExecStart=/bin/sleep 1000\n")
	m.mustSystemctl(1, "start", "prefail")
	m.mustSystemctl(0, "is-failed", "prefail")
	m.writeUnit("preok.service", fmt.Sprintf("[Service]\nExecStartPre=-/bin/false\nExecStartPre=/bin/sh -c 'echo pre > %s'\nExecStart=/bin/sleep 1000\n", m.path("pre.out")))
	m.mustSystemctl(0, "start", "preok")
	m.mustSystemctl(0, "is-active", "preok")
	if data, _ := os.ReadFile(m.path("pre.out")); string(data) != "pre\n" {
		t.Errorf("second ExecStartPre did not run: %q", data)
	}
}

// LimitNOFILE= is applied to the service, not to the supervisor.
func TestLimitNOFILE(t *testing.T) {
	t.Parallel()
	m := startMachine(t)
	m.writeUnit("limits.service", fmt.Sprintf("[Service]\nLimitNOFILE=4321\nExecStart=/bin/sh -c 'echo $$$$ > %s; exec sleep 1000'\n", m.path("main.pid")))
	m.mustSystemctl(0, "start", "limits")
	pid := m.readPid("main.pid")
	data, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "limits"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "Max open files            4321                 4321") {
		t.Errorf("limits of the service:\n%s", data)
	}
	self, _ := os.ReadFile(filepath.Join("/proc", fmt.Sprint(m.cmd.Process.Pid), "limits"))
	if strings.Contains(string(self), "4321") {
		t.Errorf("the supervisor's own limit changed:\n%s", self)
	}
}
