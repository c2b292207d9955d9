package minisystemd

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER from <linux/prctl.h>.
const prSetChildSubreaper = 36

// reaper owns every wait in the process. As PID 1 (or a child subreaper)
// the supervisor inherits orphans and must reap them with wait4(-1); doing so
// would steal the exit status of the children it started itself if anything
// else waited for them, so all children are started through spawn and their
// statuses are handed back by pid. spawnMu is held from fork to registration
// and around each wait4, so a child cannot be reaped before it is known.
type reaper struct {
	spawnMu sync.Mutex
	waiters map[int]chan syscall.WaitStatus
	// orphan is called for every reaped process nobody waits for.
	orphan func(pid int, ws syscall.WaitStatus)
}

func newReaper(orphan func(int, syscall.WaitStatus)) *reaper {
	return &reaper{waiters: map[int]chan syscall.WaitStatus{}, orphan: orphan}
}

// becomeSubreaper makes orphaned descendants re-parent to this process even
// when it is not PID 1 (tests run it that way).
func becomeSubreaper() error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// run reaps on every SIGCHLD and, as a safety net against coalesced or lost
// signals, once a second. It never returns.
func (r *reaper) run() {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD)
	tick := time.NewTicker(time.Second)
	for {
		r.reapAll()
		select {
		case <-sigs:
		case <-tick.C:
		}
	}
}

func (r *reaper) reapAll() {
	r.spawnMu.Lock()
	defer r.spawnMu.Unlock()
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		if ch, ok := r.waiters[pid]; ok {
			delete(r.waiters, pid)
			ch <- ws
			continue
		}
		if r.orphan != nil {
			r.orphan(pid, ws)
		}
	}
}

// spawn starts argv[0] with the attributes given and returns its pid and a
// channel that receives its wait status once.
func (r *reaper) spawn(argv0 string, argv []string, attr *syscall.ProcAttr) (int, <-chan syscall.WaitStatus, error) {
	r.spawnMu.Lock()
	defer r.spawnMu.Unlock()
	pid, err := syscall.ForkExec(argv0, argv, attr)
	if err != nil {
		return 0, nil, err
	}
	ch := make(chan syscall.WaitStatus, 1)
	r.waiters[pid] = ch
	return pid, ch, nil
}
