package minisystemd

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// request is one systemctl invocation sent to the supervisor.
type request struct {
	Verb   string   `json:"verb"`
	Units  []string `json:"units,omitempty"`
	Now    bool     `json:"now,omitempty"`
	Signal string   `json:"signal,omitempty"`
}

// response is what systemctl prints and the status it exits with.
type response struct {
	Stdout string `json:"stdout,omitempty"`
	Stderr string `json:"stderr,omitempty"`
	Code   int    `json:"code"`
}

// Exit statuses systemctl uses (LSB-style for status and is-active).
const (
	exitFailure     = 1
	exitNotActive   = 3
	exitNoSuchUnit  = 4
	exitUnitMissing = 5
)

// listen creates the control socket, replacing a stale one.
func (m *Manager) listen() (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(m.cfg.Socket), 0o755); err != nil {
		return nil, fmt.Errorf("creating socket dir: %w", err)
	}
	_ = os.Remove(m.cfg.Socket)
	l, err := net.Listen("unix", m.cfg.Socket)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", m.cfg.Socket, err)
	}
	return l, nil
}

func (m *Manager) serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				m.logf("control socket: %v", err)
			}
			return
		}
		go m.serveConn(c)
	}
}

func (m *Manager) serveConn(c net.Conn) {
	defer func() { _ = c.Close() }()
	var req request
	if err := json.NewDecoder(c).Decode(&req); err != nil {
		m.logf("control socket: bad request: %v", err)
		return
	}
	resp := m.handle(req)
	if err := json.NewEncoder(c).Encode(resp); err != nil {
		m.logf("control socket: replying to %s: %v", req.Verb, err)
	}
}

// out collects a response.
type out struct {
	stdout, stderr strings.Builder
	code           int
}

func (o *out) println(format string, args ...any) { fmt.Fprintf(&o.stdout, format+"\n", args...) }
func (o *out) eprintln(format string, args ...any) {
	fmt.Fprintf(&o.stderr, format+"\n", args...)
}
func (o *out) fail(code int, format string, args ...any) {
	o.eprintln(format, args...)
	if o.code == 0 {
		o.code = code
	}
}

// unitVerbs need at least one unit argument.
var unitVerbs = map[string]bool{
	"enable": true, "disable": true, "start": true, "stop": true, "restart": true,
	"try-restart": true, "is-active": true, "is-failed": true, "is-enabled": true,
	"status": true, "kill": true,
}

func (m *Manager) handle(req request) response {
	o := &out{}
	if unitVerbs[req.Verb] && len(req.Units) == 0 {
		o.fail(exitFailure, "Too few arguments.")
		return response{Stderr: o.stderr.String(), Code: o.code}
	}
	m.logf("systemctl %s %s", req.Verb, strings.Join(req.Units, " "))
	switch req.Verb {
	case "daemon-reload":
		if err := m.reload(); err != nil {
			o.fail(exitFailure, "daemon-reload: %v", err)
		}
	case "enable":
		m.verbEnable(o, req)
	case "disable":
		m.verbDisable(o, req)
	case "start", "restart", "try-restart":
		for _, n := range req.Units {
			m.startLike(o, req.Verb, n)
		}
	case "stop":
		for _, n := range req.Units {
			m.verbStop(o, n)
		}
	case "is-active", "is-failed":
		m.verbIsActive(o, req)
	case "is-enabled":
		m.verbIsEnabled(o, req)
	case "reset-failed":
		m.verbResetFailed(o, req)
	case "status":
		for _, n := range req.Units {
			m.verbStatus(o, n)
		}
	case "kill":
		m.verbKill(o, req)
	default:
		m.logf("systemctl: unknown verb %q refused", req.Verb)
		o.fail(exitFailure, "Unknown command verb '%s' (minisystemd implements: daemon-reload enable disable start stop restart try-restart is-active is-failed is-enabled reset-failed status kill).", req.Verb)
	}
	return response{Stdout: o.stdout.String(), Stderr: o.stderr.String(), Code: o.code}
}

func (m *Manager) verbEnable(o *out, req request) {
	for _, n := range req.Units {
		lines, err := m.enable(n)
		for _, l := range lines {
			o.eprintln("%s", l)
		}
		if err != nil {
			o.fail(exitFailure, "Failed to enable unit: %v", err)
			continue
		}
		if req.Now {
			m.startLike(o, "start", n)
		}
	}
}

func (m *Manager) verbDisable(o *out, req request) {
	for _, n := range req.Units {
		lines, err := m.disable(n)
		for _, l := range lines {
			o.eprintln("%s", l)
		}
		if err != nil {
			o.fail(exitFailure, "Failed to disable unit: %v", err)
			continue
		}
		if req.Now {
			m.verbStop(o, n)
		}
	}
}

// startLike runs start, restart or try-restart on one unit.
func (m *Manager) startLike(o *out, verb, n string) {
	name := normalizeUnit(n)
	u, err := m.unit(n)
	if errors.Is(err, errNoUnit) {
		o.fail(exitUnitMissing, "Failed to %s %s: Unit %s not found.", verb, name, name)
		return
	}
	if err != nil {
		o.fail(exitFailure, "Failed to %s %s: %v", verb, name, err)
		return
	}
	switch verb {
	case "start":
		err = u.start()
	case "restart":
		err = u.restart()
	case "try-restart":
		u.mu.Lock()
		running := u.run != nil
		u.mu.Unlock()
		if !running {
			return
		}
		err = u.restart()
	}
	if err != nil {
		o.fail(exitFailure, "Job for %s failed: %v.\nSee \"systemctl status %s\" and %s for details.",
			name, err, name, m.UnitLogPath(name))
	}
}

func (m *Manager) verbStop(o *out, n string) {
	name := normalizeUnit(n)
	u := m.lookup(n)
	if u == nil {
		if _, err := m.unit(n); err != nil {
			o.fail(exitUnitMissing, "Failed to stop %s: Unit %s not loaded.", name, name)
		}
		return // loaded now, and not running: nothing to stop
	}
	u.stop()
}

// activeState reports a unit's state without loading it: a unit that was
// never loaded is inactive, as systemd reports for unknown units.
func (m *Manager) activeState(n string) string {
	u := m.lookup(n)
	if u == nil {
		return StateInactive
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.state
}

func (m *Manager) verbIsActive(o *out, req request) {
	want := StateActive
	if req.Verb == "is-failed" {
		want = StateFailed
	}
	matched := false
	for _, n := range req.Units {
		s := m.activeState(n)
		o.println("%s", s)
		matched = matched || s == want
	}
	switch {
	case matched:
	case req.Verb == "is-active":
		o.code = exitNotActive
	default:
		o.code = exitFailure
	}
}

func (m *Manager) verbIsEnabled(o *out, req request) {
	any := false
	for _, n := range req.Units {
		s, err := m.isEnabled(n)
		if err != nil {
			o.fail(exitFailure, "Failed to get unit file state for %s: No such file or directory", normalizeUnit(n))
			continue
		}
		o.println("%s", s)
		any = any || s == "enabled"
	}
	if !any && o.code == 0 {
		o.code = exitFailure
	}
}

func (m *Manager) verbResetFailed(o *out, req request) {
	units := req.Units
	if len(units) == 0 {
		m.mu.Lock()
		for name := range m.units {
			units = append(units, name)
		}
		m.mu.Unlock()
	}
	for _, n := range units {
		u := m.lookup(n)
		if u == nil {
			o.fail(exitFailure, "Failed to reset failed state of unit %s: Unit %s not loaded.", normalizeUnit(n), normalizeUnit(n))
			continue
		}
		u.mu.Lock()
		if u.state == StateFailed {
			u.setStateLocked(StateInactive)
		}
		u.lastResult = ""
		u.autoRestarts = nil
		u.mu.Unlock()
	}
}
