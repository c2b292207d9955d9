package envtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
)

// apiServerStopTimeout bounds a graceful stop of the management kube-apiserver before
// it is killed. kube-apiserver drains its long-running requests (the watches every
// controller holds) for much longer on SIGTERM; a short grace keeps an outage of a few
// seconds a few seconds, and a kill loses nothing: the data is in etcd.
const apiServerStopTimeout = 3 * time.Second

// APIServerRestarter stops and starts the environment's kube-apiserver again, with
// the same command line (so the same port, certificates and etcd: nothing is lost and
// every client reconnects to the same address), plus the extra flags it was given.
//
// envtest cannot do this itself: its APIServer.Stop/Start make a new CA and forget
// its users. The first restart takes over the process envtest started (a child of
// this process, found by its secure port); later ones restart the restarter's own.
// Stop must be called before Environment.Stop, which only knows envtest's process.
type APIServerRestarter struct {
	env   *Environment
	extra []string
	log   string

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	restarts int
}

// NewAPIServerRestarter prepares restarts; extra flags (e.g. an audit log) are added
// to the command line from the first restart on. The restarted processes' output goes
// to logPath.
func (e *Environment) NewAPIServerRestarter(logPath string, extra ...string) *APIServerRestarter {
	return &APIServerRestarter{env: e, extra: extra, log: logPath}
}

// Restarts counts the restarts done.
func (r *APIServerRestarter) Restarts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.restarts
}

// Restart stops the apiserver (SIGTERM, then SIGKILL after apiServerStopTimeout),
// keeps it down for downtime, starts it again and waits until it
// serves /readyz.
func (r *APIServerRestarter) Restart(ctx context.Context, downtime time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	args, err := r.stopCurrent()
	if err != nil {
		return err
	}
	select {
	case <-time.After(downtime):
	case <-ctx.Done():
	}
	if err := r.start(args); err != nil {
		return err
	}
	r.restarts++
	return r.waitReady(ctx)
}

// stopCurrent stops the running apiserver and returns its command line, with the
// extra flags.
func (r *APIServerRestarter) stopCurrent() ([]string, error) {
	if r.cmd != nil {
		args := r.cmd.Args
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.exited:
		case <-time.After(apiServerStopTimeout):
			_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
			<-r.exited
		}
		r.cmd = nil
		return args, nil
	}
	port, err := r.port()
	if err != nil {
		return nil, err
	}
	pid, args, err := findChild("kube-apiserver", "--secure-port="+port)
	if err != nil {
		return nil, err
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return nil, fmt.Errorf("stopping kube-apiserver %d: %w", pid, err)
	}
	// envtest's goroutine reaps it; the port is free once it is gone.
	deadline := time.Now().Add(apiServerStopTimeout)
	for portOpen(port) || alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			deadline = time.Now().Add(apiServerStopTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return append(args, r.extra...), nil
}

func (r *APIServerRestarter) start(args []string) error {
	log, err := os.OpenFile(r.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return errors.Join(fmt.Errorf("starting kube-apiserver again: %w", err), log.Close())
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = log.Close(); close(exited) }()
	r.cmd, r.exited = cmd, exited
	return nil
}

func (r *APIServerRestarter) waitReady(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(r.env.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	exited := r.exited
	return WaitFor(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		select {
		case <-exited:
			return false, fmt.Errorf("kube-apiserver exited after its restart; see %s", r.log)
		default:
		}
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
}

// Stop ends the restarted apiserver, if any.
func (r *APIServerRestarter) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(apiServerStopTimeout):
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.exited
	}
	r.cmd = nil
}

func (r *APIServerRestarter) port() (string, error) {
	u, err := url.Parse(r.env.Config.Host)
	if err != nil {
		return "", err
	}
	return u.Port(), nil
}

// findChild finds this process's child running the named program with the given
// argument, and returns its pid and command line.
func findChild(program, arg string) (int, []string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, err
	}
	me := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(me) {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if filepath.Base(args[0]) != program {
			continue
		}
		for _, a := range args[1:] {
			if a == arg {
				return pid, args, nil
			}
		}
	}
	return 0, nil, fmt.Errorf("no child %s with %s", program, arg)
}

// alive says the process exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func portOpen(port string) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", port), 200*time.Millisecond)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}
