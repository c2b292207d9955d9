package minisystemd

import (
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Environment variables that move the supervisor's paths (tests use them).
const (
	EnvSocket  = "MINISYSTEMD_SOCKET"
	EnvUnitDir = "MINISYSTEMD_UNIT_DIR"
	EnvLogDir  = "MINISYSTEMD_LOG_DIR"
)

// Default paths inside a machine.
const (
	DefaultSocket  = "/run/minisystemd.sock"
	DefaultUnitDir = "/etc/systemd/system"
	DefaultLogDir  = "/var/log/minisystemd"
)

// Config holds the supervisor's paths.
type Config struct {
	Socket  string
	UnitDir string
	LogDir  string
}

// ConfigFromEnv returns the default paths, overridden by the MINISYSTEMD_*
// environment variables.
func ConfigFromEnv() Config {
	get := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	return Config{
		Socket:  get(EnvSocket, DefaultSocket),
		UnitDir: get(EnvUnitDir, DefaultUnitDir),
		LogDir:  get(EnvLogDir, DefaultLogDir),
	}
}

// UnitLogPath is where a unit's stdout and stderr go: <logdir>/<name>.log
// with the name lacking ".service" (k3s.log).
func UnitLogPath(logDir, unit string) string {
	return filepath.Join(logDir, strings.TrimSuffix(normalizeUnit(unit), ".service")+".log")
}

// Manager is the supervisor: it owns the units and every child process.
type Manager struct {
	cfg    Config
	reaper *reaper
	logger *log.Logger
	self   string // this binary, for the exec-limits helper

	mu      sync.Mutex
	units   map[string]*unitState
	notifys map[string]string // unit name -> notify socket path
}

func newManager(cfg Config) (*Manager, error) {
	if err := os.MkdirAll(cfg.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating log dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(cfg.LogDir, "minisystemd.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening supervisor log: %w", err)
	}
	m := &Manager{
		cfg:     cfg,
		logger:  log.New(f, "", log.LstdFlags|log.Lmicroseconds|log.LUTC),
		units:   map[string]*unitState{},
		notifys: map[string]string{},
	}
	if self, err := os.Executable(); err == nil {
		m.self = self
	}
	m.reaper = newReaper(func(pid int, ws syscall.WaitStatus) {
		m.logf("reaped orphan %d: %s", pid, describeExit(ws))
	})
	return m, nil
}

func (m *Manager) logf(format string, args ...any) {
	m.logger.Printf(format, args...)
}

// UnitLogPath is the log file of the unit's output.
func (m *Manager) UnitLogPath(unit string) string {
	return UnitLogPath(m.cfg.LogDir, unit)
}

// normalizeUnit turns "k3s", "k3s.service" or "/etc/systemd/system/k3s.service"
// into "k3s.service".
func normalizeUnit(name string) string {
	name = filepath.Base(name)
	if !strings.HasSuffix(name, ".service") {
		name += ".service"
	}
	return name
}

// errNoUnit is returned for a unit without a unit file.
var errNoUnit = errors.New("unit not found")

// unit returns the unit's runtime, loading its file on first use.
func (m *Manager) unit(name string) (*unitState, error) {
	name = normalizeUnit(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if u, ok := m.units[name]; ok {
		return u, nil
	}
	def, err := LoadUnit(name, filepath.Join(m.cfg.UnitDir, name))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", errNoUnit, name)
		}
		return nil, err
	}
	u := &unitState{m: m, name: name, def: def, state: StateInactive, since: time.Now()}
	m.units[name] = u
	return u, nil
}

// lookup returns a loaded unit without loading it.
func (m *Manager) lookup(name string) *unitState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.units[normalizeUnit(name)]
}

// reload re-reads the files of every loaded unit (daemon-reload). A running
// unit keeps its process; the new definition applies from its next start.
// A unit whose file is gone is forgotten unless it runs.
func (m *Manager) reload() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for name, u := range m.units {
		def, err := LoadUnit(name, filepath.Join(m.cfg.UnitDir, name))
		u.mu.Lock()
		switch {
		case err == nil:
			u.def = def
		case errors.Is(err, fs.ErrNotExist) && u.run == nil:
			delete(m.units, name)
		default:
			errs = append(errs, err)
		}
		u.mu.Unlock()
	}
	m.logf("daemon-reload")
	return errors.Join(errs...)
}

// killRun stops one run: SIGTERM (and SIGCONT) to the main process and, unless
// KillMode=process, to every process of the unit; after TimeoutStopSec
// SIGKILL. With KillMode=process the main process's children are left
// running (for k3s: the containerd shims, which k3s-killall.sh cleans up).
func (m *Manager) killRun(name string, r *run, def *Unit) {
	targets := func() []int {
		pids := []int{r.pid}
		if !def.KillProcessOnly {
			pids = append(pids, unitProcs(r.pid)...)
		}
		return pids
	}
	initial := targets()
	signalAll(initial, syscall.SIGTERM)
	signalAll(initial, syscall.SIGCONT)
	var deadline <-chan time.Time
	if def.TimeoutStop > 0 {
		t := time.NewTimer(def.TimeoutStop)
		defer t.Stop()
		deadline = t.C
	}
	timedOut := false
	select {
	case <-r.done:
	case <-deadline:
		timedOut = true
		m.logf("%s: main process %d still running after TimeoutStopSec=%s, sending SIGKILL", name, r.pid, def.TimeoutStop)
		signalAll(targets(), syscall.SIGKILL)
		<-r.done
	}
	if def.KillProcessOnly {
		return
	}
	// The rest of the unit: wait for it like systemd waits for the cgroup
	// to empty, then kill what is left.
	for {
		left := unitProcs(r.pid)
		for _, pid := range initial {
			if pid != r.pid && alive(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return
		}
		if timedOut {
			signalAll(left, syscall.SIGKILL)
			return
		}
		select {
		case <-deadline:
			m.logf("%s: processes %v still running after TimeoutStopSec, sending SIGKILL", name, left)
			signalAll(left, syscall.SIGKILL)
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stopAll stops every running unit concurrently.
func (m *Manager) stopAll() {
	m.mu.Lock()
	units := make([]*unitState, 0, len(m.units))
	for _, u := range m.units {
		units = append(units, u)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, u := range units {
		wg.Go(u.stop)
	}
	wg.Wait()
}
