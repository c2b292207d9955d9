package minisystemd

import (
	"context"
	"errors"
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

// binPath is the minisystemd binary built once by TestMain with Build;
// systemctlPath is a symlink to it named systemctl.
var binPath, systemctlPath string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "minisystemd-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	binPath = filepath.Join(dir, "minisystemd")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := Build(ctx, binPath); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	systemctlPath = filepath.Join(dir, "systemctl")
	if err := os.Symlink(binPath, systemctlPath); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// machine is one running `minisystemd init` with its own socket, unit and
// log directories.
type machine struct {
	t       *testing.T
	dir     string
	cfg     Config
	cmd     *exec.Cmd
	exited  chan struct{}
	exitErr error
}

// startMachine runs init without a boot command.
func startMachine(t *testing.T) *machine {
	t.Helper()
	return startMachineIn(t, t.TempDir())
}

func startMachineIn(t *testing.T, dir string, boot ...string) *machine {
	t.Helper()
	return startMachineEnv(t, dir, nil, boot...)
}

// startMachineEnv starts init with exactly env plus the MINISYSTEMD_*
// variables (nil env: the test's environment).
func startMachineEnv(t *testing.T, dir string, env []string, boot ...string) *machine {
	t.Helper()
	m := &machine{t: t, dir: dir, exited: make(chan struct{}), cfg: Config{
		Socket:  filepath.Join(dir, "run", "minisystemd.sock"),
		UnitDir: filepath.Join(dir, "units"),
		LogDir:  filepath.Join(dir, "log"),
	}}
	if err := os.MkdirAll(m.cfg.UnitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"init"}
	if len(boot) > 0 {
		args = append(append(args, "--"), boot...)
	}
	m.cmd = exec.Command(binPath, args...)
	m.cmd.Env = m.env()
	if env != nil {
		m.cmd.Env = append(env, EnvSocket+"="+m.cfg.Socket, EnvUnitDir+"="+m.cfg.UnitDir, EnvLogDir+"="+m.cfg.LogDir)
	}
	m.cmd.Stderr = os.Stderr
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { m.exitErr = m.cmd.Wait(); close(m.exited) }()
	t.Cleanup(m.shutdown)
	m.waitFor("control socket", 5*time.Second, func() bool {
		_, err := os.Stat(m.cfg.Socket)
		return err == nil
	})
	return m
}

func (m *machine) env() []string {
	return append(os.Environ(),
		EnvSocket+"="+m.cfg.Socket, EnvUnitDir+"="+m.cfg.UnitDir, EnvLogDir+"="+m.cfg.LogDir)
}

// shutdown sends SIGTERM and waits; a supervisor that does not exit is
// killed and the test fails.
func (m *machine) shutdown() {
	select {
	case <-m.exited:
		return
	default:
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(20 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.exited
		m.t.Errorf("init did not exit on SIGTERM")
	}
}

// systemctl runs the client as systemctl and returns stdout, stderr and the
// exit status.
func (m *machine) systemctl(args ...string) (string, string, int) {
	m.t.Helper()
	cmd := exec.Command(systemctlPath, args...)
	cmd.Env = m.env()
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		m.t.Fatalf("running systemctl %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// mustSystemctl fails the test unless systemctl exits with want.
func (m *machine) mustSystemctl(want int, args ...string) string {
	m.t.Helper()
	out, errOut, code := m.systemctl(args...)
	if code != want {
		m.t.Fatalf("systemctl %v: exit %d, want %d\nstdout: %s\nstderr: %s\nlog:\n%s",
			args, code, want, out, errOut, m.readLog("minisystemd.log"))
	}
	return out
}

func (m *machine) writeUnit(name, text string) string {
	m.t.Helper()
	p := filepath.Join(m.cfg.UnitDir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		m.t.Fatal(err)
	}
	return p
}

func (m *machine) readLog(name string) string {
	data, _ := os.ReadFile(filepath.Join(m.cfg.LogDir, name))
	return string(data)
}

func (m *machine) path(name string) string { return filepath.Join(m.dir, name) }

// waitFor polls cond until it holds or the timeout passes.
func (m *machine) waitFor(what string, timeout time.Duration, cond func() bool) {
	m.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			m.t.Fatalf("timed out waiting for %s\nlog:\n%s", what, m.readLog("minisystemd.log"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readPid waits for a pid file a service writes and returns the pid.
func (m *machine) readPid(name string) int {
	m.t.Helper()
	var pid int
	m.waitFor("pid file "+name, 5*time.Second, func() bool {
		data, err := os.ReadFile(m.path(name))
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	})
	return pid
}

// isAlive reports whether pid exists and is not a zombie.
func isAlive(pid int) bool { return alive(pid) }

// killAtEnd kills a process the test leaves behind on purpose.
func killAtEnd(t *testing.T, pid int) {
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
}
