package minisystemd

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

const usage = `usage:
  minisystemd init [-- BOOT COMMAND...]   run as the machine's init
  minisystemd systemctl VERB [UNIT...]    the systemctl client (also as argv[0] "systemctl")
  minisystemd notify VAR=VALUE...         send to $NOTIFY_SOCKET (also as argv[0] "systemd-notify")`

// Main runs the role chosen by argv[0] or the first argument and returns the
// process's exit status.
func Main(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, usage)
		return 1
	}
	switch filepath.Base(args[0]) {
	case "systemctl":
		return systemctlMain(args[1:], os.Stdout, os.Stderr)
	case "systemd-notify":
		return notifyMain(args[1:])
	}
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		return 1
	}
	switch args[1] {
	case "init":
		boot := args[2:]
		if len(boot) > 0 && boot[0] == "--" {
			boot = boot[1:]
		}
		if err := runInit(ConfigFromEnv(), boot); err != nil {
			fmt.Fprintf(os.Stderr, "minisystemd init: %v\n", err)
			return 1
		}
		return 0
	case "systemctl":
		return systemctlMain(args[2:], os.Stdout, os.Stderr)
	case "notify":
		return notifyMain(args[2:])
	case verbExecLimits:
		return execLimits(args[2:])
	}
	fmt.Fprintf(os.Stderr, "minisystemd: unknown role %q\n%s\n", args[1], usage)
	return 1
}

// notifyMain sends sd_notify assignments; "--ready" stands for READY=1 as
// in systemd-notify.
func notifyMain(args []string) int {
	var assignments []string
	for _, a := range args {
		switch {
		case a == "--ready":
			assignments = append(assignments, "READY=1")
		case strings.Contains(a, "="):
			assignments = append(assignments, a)
		}
	}
	if err := sendNotify(assignments); err != nil {
		fmt.Fprintf(os.Stderr, "minisystemd notify: %v\n", err)
		return 1
	}
	return 0
}

// runBoot runs the boot command once, its output in boot.log, and records
// its exit status in boot.exit (128+signal when killed, as a shell reports).
func (m *Manager) runBoot(argv []string) (pid int, err error) {
	logPath := filepath.Join(m.cfg.LogDir, "boot.log")
	out, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return 0, fmt.Errorf("opening boot log: %w", err)
	}
	defer func() { _ = out.Close() }()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return 0, fmt.Errorf("opening %s: %w", os.DevNull, err)
	}
	defer func() { _ = devnull.Close() }()
	env := bootEnv()
	path, err := lookPath(argv[0], envValueOf(env, "PATH"))
	if err != nil {
		return 0, err
	}
	pid, ch, err := m.reaper.spawn(path, argv, &syscall.ProcAttr{
		Dir:   "/",
		Env:   env,
		Files: []uintptr{devnull.Fd(), out.Fd(), out.Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		return 0, fmt.Errorf("starting boot command %v: %w", argv, err)
	}
	m.logf("boot: started %v as %d", argv, pid)
	go func() {
		ws := <-ch
		code := ws.ExitStatus()
		if ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		m.logf("boot: %v %s", argv, describeExit(ws))
		exitPath := filepath.Join(m.cfg.LogDir, "boot.exit")
		if err := os.WriteFile(exitPath, []byte(strconv.Itoa(code)+"\n"), 0o644); err != nil {
			m.logf("boot: writing %s: %v", exitPath, err)
		}
	}()
	return pid, nil
}

// bootEnv is init's environment with PATH and HOME defaulted, so that a
// machine started with an empty environment still boots.
func bootEnv() []string {
	env := os.Environ()
	if os.Getenv("PATH") == "" {
		env = append(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	}
	if os.Getenv("HOME") == "" {
		env = append(env, "HOME=/root")
	}
	return env
}

func envValueOf(env []string, key string) string {
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); k == key {
			return v
		}
	}
	return ""
}
