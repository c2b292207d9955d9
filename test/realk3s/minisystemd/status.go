package minisystemd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// verbStatus prints a short status, exiting 0 when active, 3 when not, 4
// when there is no such unit.
func (m *Manager) verbStatus(o *out, n string) {
	name := normalizeUnit(n)
	u, err := m.unit(n)
	if errors.Is(err, errNoUnit) {
		o.fail(exitNoSuchUnit, "Unit %s could not be found.", name)
		return
	}
	if err != nil {
		o.fail(exitFailure, "Failed to load %s: %v", name, err)
		return
	}
	enabled, _ := m.isEnabled(name)
	u.mu.Lock()
	defer u.mu.Unlock()
	o.println("* %s - %s", name, u.def.Description)
	o.println("     Loaded: loaded (%s; %s)", u.def.Path, enabled)
	detail := ""
	switch {
	case u.run != nil && u.state == StateActive:
		detail = " (running)"
	case u.run != nil:
		detail = " (start)"
	case u.state == StateActivating:
		detail = " (auto-restart)"
	case u.lastResult != "":
		detail = " (" + u.lastResult + ")"
	}
	o.println("     Active: %s%s since %s", u.state, detail, u.since.UTC().Format(time.RFC3339))
	if u.run != nil {
		o.println("   Main PID: %d", u.run.pid)
	}
	if u.statusText != "" {
		o.println("     Status: %q", u.statusText)
	}
	o.println("        Log: %s", m.UnitLogPath(name))
	if u.state != StateActive && o.code == 0 {
		o.code = exitNotActive
	}
}

// verbKill sends a signal (default SIGTERM) to each unit's main process.
func (m *Manager) verbKill(o *out, req request) {
	sig := syscall.SIGTERM
	if req.Signal != "" {
		s, err := parseSignal(req.Signal)
		if err != nil {
			o.fail(exitFailure, "%v", err)
			return
		}
		sig = s
	}
	for _, n := range req.Units {
		name := normalizeUnit(n)
		u := m.lookup(n)
		pid := 0
		if u != nil {
			u.mu.Lock()
			if u.run != nil {
				pid = u.run.pid
			}
			u.mu.Unlock()
		}
		if pid == 0 {
			o.fail(exitFailure, "Failed to kill unit %s: No main process to kill", name)
			continue
		}
		m.logf("%s: sending %s to main process %d", name, sig, pid)
		if err := syscall.Kill(pid, sig); err != nil {
			o.fail(exitFailure, "Failed to kill unit %s: %v", name, err)
		}
	}
}

var signalNames = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT,
	"KILL": syscall.SIGKILL, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
	"PIPE": syscall.SIGPIPE, "ALRM": syscall.SIGALRM, "TERM": syscall.SIGTERM,
	"CONT": syscall.SIGCONT, "STOP": syscall.SIGSTOP, "ABRT": syscall.SIGABRT,
}

// parseSignal accepts "SIGTERM", "TERM" or "15".
func parseSignal(s string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	if sig, ok := signalNames[strings.TrimPrefix(strings.ToUpper(s), "SIG")]; ok {
		return sig, nil
	}
	return 0, fmt.Errorf("unknown signal %q", s)
}
