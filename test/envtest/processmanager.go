package envtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ManagerCommands are the manager binaries a process test runs, by command name.
var ManagerCommands = []string{"bootstrap-manager", "controlplane-manager"}

// BuildManagers builds cmd/bootstrap-manager and cmd/controlplane-manager into dir, in
// one go build (the build cache makes a second run take seconds), and returns the
// binaries' paths by command name.
func BuildManagers(dir string) (map[string]string, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, c := range ManagerCommands {
		args = append(args, "./cmd/"+c)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the managers: %w: %s", err, out)
	}
	bins := map[string]string{}
	for _, c := range ManagerCommands {
		bins[c] = filepath.Join(dir, c)
	}
	return bins, nil
}

// ProcessOptions describe one manager process.
type ProcessOptions struct {
	// Name names the process in logs and its files, e.g. controlplane-manager-0.
	Name string
	// Binary is the manager's executable (see BuildManagers).
	Binary string
	// Dir receives the process's kubeconfig and its log, <Name>.log.
	Dir string
	// User is the apiserver user the process acts as (in system:masters), so that an
	// audit log attributes each write to one process; "" is Name.
	User string
	// Args are added to the ones every process gets: kubeconfig, leader election
	// (with the Lease in the default namespace), free health and webhook ports, the
	// webhook certificate of the environment, no metrics.
	Args []string
}

// ManagerProcess is a manager binary run as a child process of the test, in a process
// group of its own so that a kill ends it and whatever it started. It is killed when
// the test binary dies, even by SIGKILL (the kernel's parent-death signal).
type ManagerProcess struct {
	Name    string
	LogPath string
	// HealthAddr serves /readyz.
	HealthAddr string

	binary string
	args   []string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	starts  int
	startAt int64 // log size when the current run started
	started time.Time
	// ends are when each run ended (killed or by itself), as seen by this process.
	ends []time.Time
}

// NewManagerProcess prepares a process (it does not start it). The Environment must
// have been started with Options.Webhooks: the manager's webhook server is given the
// environment's serving certificate, on a port of its own that nothing calls.
func (e *Environment) NewManagerProcess(o ProcessOptions) (*ManagerProcess, error) {
	if o.User == "" {
		o.User = o.Name
	}
	user, err := e.env.AddUser(envtest.User{Name: o.User, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("user for %s: %w", o.Name, err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig for %s: %w", o.Name, err)
	}
	kubeconfigPath := filepath.Join(o.Dir, o.Name+".kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	health, err := FreePort()
	if err != nil {
		return nil, err
	}
	webhook, err := FreePort()
	if err != nil {
		return nil, err
	}
	p := &ManagerProcess{
		Name: o.Name, LogPath: filepath.Join(o.Dir, o.Name+".log"),
		HealthAddr: "127.0.0.1:" + strconv.Itoa(health), binary: o.Binary,
	}
	p.args = append([]string{
		"--kubeconfig=" + kubeconfigPath,
		"--leader-elect", "--leader-elect-namespace=default",
		"--health-addr=" + p.HealthAddr,
		"--webhook-port=" + strconv.Itoa(webhook),
		"--webhook-cert-dir=" + e.env.WebhookInstallOptions.LocalServingCertDir,
		"--diagnostics-address=0",
	}, o.Args...)
	return p, nil
}

// Start starts the process; its output is appended to LogPath after a line that marks
// the start. Starting a running process is an error.
func (p *ManagerProcess) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s is running", p.Name)
	}
	log, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	p.starts++
	if _, err := fmt.Fprintf(log, "=== capk3s test: start %d of %s at %s\n", p.starts, p.Name, time.Now().Format(time.RFC3339Nano)); err != nil {
		return errors.Join(err, log.Close())
	}
	if st, err := log.Stat(); err == nil {
		p.startAt = st.Size()
	}
	cmd := exec.Command(p.binary, p.args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return errors.Join(fmt.Errorf("starting %s: %w", p.Name, err), log.Close())
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		p.mu.Lock()
		p.ends = append(p.ends, time.Now())
		p.mu.Unlock()
		_ = log.Close()
		close(exited)
	}()
	p.cmd, p.exited, p.started = cmd, exited, time.Now()
	return nil
}

// Kill ends the process with SIGKILL, its whole process group, and waits for it. A
// process that is not running is left alone.
func (p *ManagerProcess) Kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
}

// Running says whether the process was started and has not been killed; a process
// that exited by itself counts as running until Kill, but Exited tells.
func (p *ManagerProcess) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// Exited says the process was started and ended by itself.
func (p *ManagerProcess) Exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Starts counts the process's starts.
func (p *ManagerProcess) Starts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts
}

// StartedAt is when the current run started (zero when not running).
func (p *ManagerProcess) StartedAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return time.Time{}
	}
	return p.started
}

// Ends are the times each run ended, killed or by itself.
func (p *ManagerProcess) Ends() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.ends...)
}

// CurrentLog is what the current run wrote so far ("" when not running).
func (p *ManagerProcess) CurrentLog() string {
	p.mu.Lock()
	running, from := p.cmd != nil, p.startAt
	p.mu.Unlock()
	if !running {
		return ""
	}
	b, err := os.ReadFile(p.LogPath)
	if err != nil || int64(len(b)) < from {
		return ""
	}
	return string(b[from:])
}

// acquiredLease is what client-go's leader election logs once a process leads
// ("Successfully acquired lease", capitalised since structured logging).
const acquiredLease = "uccessfully acquired lease"

// Leads says the process runs and has acquired its Lease in its current run (a
// manager that loses its Lease exits).
func (p *ManagerProcess) Leads() bool {
	return p.Running() && !p.Exited() && strings.Contains(p.CurrentLog(), acquiredLease)
}

// WaitReady polls /readyz until it answers 200, the process exits, or ctx ends.
func (p *ManagerProcess) WaitReady(ctx context.Context) error {
	url := "http://" + p.HealthAddr + "/readyz"
	return WaitFor(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("%s exited; see %s", p.Name, p.LogPath)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}
