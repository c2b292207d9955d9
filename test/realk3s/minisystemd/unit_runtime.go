package minisystemd

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"
)

// Unit active states, as systemctl is-active prints them.
const (
	StateInactive     = "inactive"
	StateActivating   = "activating"
	StateActive       = "active"
	StateDeactivating = "deactivating"
	StateFailed       = "failed"
)

// unitState is one unit's runtime. jobMu serialises the jobs that change
// what runs (start, stop, restart, a scheduled auto-restart); mu guards the
// fields. A start job releases jobMu before it waits for READY=1, so a stop
// can cancel a start that never becomes ready, as in systemd.
type unitState struct {
	m     *Manager
	name  string
	jobMu sync.Mutex

	mu         sync.Mutex
	def        *Unit
	state      string
	since      time.Time
	run        *run
	stopping   bool
	restartGen int // bumped to cancel a scheduled auto-restart
	lastResult string
	statusText string // last STATUS= from the service
	// earlyReady records a READY=1 that arrived between the fork of the
	// main process and its registration as the current run.
	earlyReady bool
	// autoRestarts holds the times of the latest auto-restarts.
	autoRestarts []time.Time
}

const (
	startLimitBurst    = 5
	startLimitInterval = 10 * time.Second
)

// run is one execution of the main process.
type run struct {
	pid       int
	done      chan struct{} // closed once ws is set
	ws        syscall.WaitStatus
	ready     chan struct{}
	readyOnce sync.Once
}

func (r *run) markReady() bool {
	first := false
	r.readyOnce.Do(func() { close(r.ready); first = true })
	return first
}

func (u *unitState) setStateLocked(s string) {
	if u.state != s {
		u.state, u.since = s, time.Now()
	}
}

// errStartFailed is returned when a start job fails; the message says why.
var errStartFailed = errors.New("start failed")

// start starts the unit unless it is already active or activating, and for
// Type=notify waits until it is ready or its main process exits.
func (u *unitState) start() error {
	u.jobMu.Lock()
	r, err := u.ensureStartedLocked()
	u.jobMu.Unlock()
	if err != nil {
		return err
	}
	return u.waitReady(r)
}

// restart stops the unit if it runs, then starts it.
func (u *unitState) restart() error {
	u.jobMu.Lock()
	u.stopLocked()
	r, err := u.ensureStartedLocked()
	u.jobMu.Unlock()
	if err != nil {
		return err
	}
	return u.waitReady(r)
}

func (u *unitState) stop() {
	u.jobMu.Lock()
	defer u.jobMu.Unlock()
	u.stopLocked()
}

// ensureStartedLocked (jobMu held) joins the current run or launches one.
// A pending auto-restart is replaced by an immediate start.
func (u *unitState) ensureStartedLocked() (*run, error) {
	u.mu.Lock()
	if u.run != nil {
		r := u.run
		u.mu.Unlock()
		return r, nil
	}
	u.restartGen++
	u.stopping = false
	def := u.def
	u.setStateLocked(StateActivating)
	u.mu.Unlock()
	return u.launchLocked(def)
}

// launchLocked (jobMu held) runs ExecStartPre= then ExecStart=.
func (u *unitState) launchLocked(def *Unit) (*run, error) {
	fail := func(err error) (*run, error) {
		u.m.logf("%s: start failed: %v", u.name, err)
		u.mu.Lock()
		u.lastResult = err.Error()
		if def.Restart != RestartNo {
			u.scheduleRestartLocked(def)
		} else {
			u.setStateLocked(StateFailed)
		}
		u.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", errStartFailed, err)
	}
	env, envList, err := serviceEnv(def)
	if err != nil {
		return fail(err)
	}
	if def.Type == "notify" {
		sock, err := u.m.notifySocket(u)
		if err != nil {
			return fail(err)
		}
		envList = append(envList, "NOTIFY_SOCKET="+sock)
	}
	for _, pre := range def.ExecStartPre {
		pid, ch, err := u.m.startCommand(def, pre.Argv, env, envList)
		if err == nil {
			ws := <-ch
			u.m.logf("%s: ExecStartPre %v (pid %d) %s", u.name, pre.Argv, pid, describeExit(ws))
			if !ws.Exited() || ws.ExitStatus() != 0 {
				err = fmt.Errorf("ExecStartPre %v %s", pre.Argv, describeExit(ws))
			}
		}
		if err != nil && !pre.IgnoreFailure {
			return fail(err)
		}
	}
	u.mu.Lock()
	u.earlyReady = false
	u.mu.Unlock()
	pid, ch, err := u.m.startCommand(def, def.ExecStart.Argv, env, envList)
	if err != nil {
		return fail(err)
	}
	r := &run{pid: pid, done: make(chan struct{}), ready: make(chan struct{})}
	u.mu.Lock()
	u.run = r
	u.lastResult = ""
	if def.Type != "notify" || u.earlyReady {
		r.markReady()
		u.setStateLocked(StateActive)
	}
	u.mu.Unlock()
	u.m.logf("%s: started main process %d: %v", u.name, pid, def.ExecStart.Argv)
	go u.watch(r, ch, def)
	if def.Type == "notify" && def.TimeoutStart > 0 {
		go u.startTimeout(r, def)
	}
	return r, nil
}

// watch waits for the main process and applies the restart policy.
func (u *unitState) watch(r *run, ch <-chan syscall.WaitStatus, def *Unit) {
	ws := <-ch
	u.mu.Lock()
	defer u.mu.Unlock()
	// The run is detached before done is closed, so a job that waited for
	// done never finds this run still current.
	if u.run == r {
		u.run = nil
	}
	r.ws = ws
	close(r.done)
	u.m.logf("%s: main process %d %s", u.name, r.pid, describeExit(r.ws))
	if u.stopping {
		return // the stop job sets the final state
	}
	failed := !cleanExit(r.ws)
	if failed {
		u.lastResult = "main process " + describeExit(r.ws)
	}
	switch {
	case def.Restart == RestartAlways, def.Restart == RestartOnFailure && failed:
		u.scheduleRestartLocked(def)
	case failed:
		u.setStateLocked(StateFailed)
	default:
		u.setStateLocked(StateInactive)
	}
}

// scheduleRestartLocked (mu held) arranges an auto-restart after RestartSec.
// The unit shows "activating" meanwhile, as systemd's auto-restart state does.
func (u *unitState) scheduleRestartLocked(def *Unit) {
	u.restartGen++
	// systemd's default start limit: 5 starts in 10 s, then the unit fails
	// instead of restarting in a tight loop.
	now := time.Now()
	u.autoRestarts = append(u.autoRestarts, now)
	if len(u.autoRestarts) > startLimitBurst {
		u.autoRestarts = u.autoRestarts[len(u.autoRestarts)-startLimitBurst:]
	}
	if len(u.autoRestarts) == startLimitBurst && now.Sub(u.autoRestarts[0]) < startLimitInterval {
		u.m.logf("%s: start request repeated too quickly, not restarting", u.name)
		u.lastResult = "start-limit-hit"
		u.autoRestarts = nil
		u.setStateLocked(StateFailed)
		return
	}
	gen := u.restartGen
	u.setStateLocked(StateActivating)
	u.m.logf("%s: scheduling restart in %s", u.name, def.RestartDelay)
	time.AfterFunc(def.RestartDelay, func() {
		u.jobMu.Lock()
		defer u.jobMu.Unlock()
		u.mu.Lock()
		if u.restartGen != gen || u.run != nil || u.stopping {
			u.mu.Unlock()
			return
		}
		cur := u.def
		u.mu.Unlock()
		u.m.logf("%s: restarting (Restart=%s)", u.name, cur.Restart)
		_, _ = u.launchLocked(cur)
	})
}

// startTimeout kills a notify service that does not become ready in
// TimeoutStartSec, which fails its start.
func (u *unitState) startTimeout(r *run, def *Unit) {
	t := time.NewTimer(def.TimeoutStart)
	defer t.Stop()
	select {
	case <-r.ready:
	case <-r.done:
	case <-t.C:
		u.m.logf("%s: not ready after TimeoutStartSec=%s, killing", u.name, def.TimeoutStart)
		u.m.killRun(u.name, r, def)
	}
}

// waitReady blocks until the run is ready or its main process exits.
func (u *unitState) waitReady(r *run) error {
	select {
	case <-r.ready:
		return nil
	case <-r.done:
		select {
		case <-r.ready:
			return nil
		default:
		}
		return fmt.Errorf("%w: main process %s before it was ready", errStartFailed, describeExit(r.ws))
	}
}

// stopLocked (jobMu held) stops the unit and cancels any auto-restart.
func (u *unitState) stopLocked() {
	u.mu.Lock()
	u.stopping = true
	u.restartGen++
	r, def := u.run, u.def
	if r == nil {
		if u.state == StateActivating {
			u.setStateLocked(StateInactive)
		}
		u.mu.Unlock()
		return
	}
	u.setStateLocked(StateDeactivating)
	u.mu.Unlock()
	u.m.logf("%s: stopping main process %d", u.name, r.pid)
	u.m.killRun(u.name, r, def)
	u.mu.Lock()
	u.setStateLocked(StateInactive)
	u.mu.Unlock()
	u.m.logf("%s: stopped", u.name)
}

// cleanExit is systemd's notion of a successful end: exit 0, or death by
// one of the signals a service is expected to die from.
func cleanExit(ws syscall.WaitStatus) bool {
	if ws.Exited() {
		return ws.ExitStatus() == 0
	}
	switch ws.Signal() {
	case syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGPIPE:
		return true
	}
	return false
}

func describeExit(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return fmt.Sprintf("killed by signal %s", ws.Signal())
	}
	return fmt.Sprintf("exited with status %d", ws.ExitStatus())
}
