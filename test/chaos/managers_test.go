package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capk3s/capk3s/test/envtest"
)

// Leader election settings of every manager process: short, so that a killed leader's
// successor takes over in seconds.
const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = time.Second
	// replicas of each manager.
	replicas = 2
)

// managers are the replicas of both manager binaries.
type managers struct {
	dir   string
	procs map[string][]*envtest.ManagerProcess
}

// startManagers builds both binaries and starts replicas of each; they are killed when
// the test ends, and by TestMain's cleanup if the test binary ends first.
func startManagers(t *testing.T, dir string) *managers {
	t.Helper()
	bins, err := envtest.BuildManagers(filepath.Join(dir, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	m := &managers{dir: dir, procs: map[string][]*envtest.ManagerProcess{}}
	for _, cmd := range envtest.ManagerCommands {
		for i := range replicas {
			p, err := env.NewManagerProcess(envtest.ProcessOptions{
				Name: fmt.Sprintf("%s-%d", cmd, i), Binary: bins[cmd], Dir: dir,
				Args: []string{
					"--leader-elect-lease-duration=" + leaseDuration.String(),
					"--leader-elect-renew-deadline=" + renewDeadline.String(),
					"--leader-elect-retry-period=" + retryPeriod.String(),
					"--concurrency=4",
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			m.procs[cmd] = append(m.procs[cmd], p)
		}
	}
	stopAll := func() {
		for _, p := range m.all() {
			p.Kill()
		}
	}
	cleanups = append(cleanups, stopAll)
	t.Cleanup(stopAll)
	for _, p := range m.all() {
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, p := range m.all() {
		if err := p.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func (m *managers) all() []*envtest.ManagerProcess {
	var all []*envtest.ManagerProcess
	for _, cmd := range envtest.ManagerCommands {
		all = append(all, m.procs[cmd]...)
	}
	return all
}

// leader is the replica of cmd that leads now, or nil: a running process that logged
// the lease's acquisition in its current run (a replica that loses its lease exits).
func (m *managers) leader(cmd string) *envtest.ManagerProcess {
	for _, p := range m.procs[cmd] {
		if p.Leads() {
			return p
		}
	}
	return nil
}

// outputs are everything every process wrote, by file name.
func (m *managers) outputs() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, p := range m.all() {
		b, err := os.ReadFile(p.LogPath)
		if err != nil {
			return nil, err
		}
		out[filepath.Base(p.LogPath)] = b
	}
	return out, nil
}

// commandOf is the manager command a process runs.
func commandOf(p *envtest.ManagerProcess) string {
	return p.Name[:strings.LastIndex(p.Name, "-")]
}
