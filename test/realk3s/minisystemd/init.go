package minisystemd

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

// runInit is the init role: it returns (and the process exits 0) after a
// SIGTERM or SIGINT has stopped every unit.
func runInit(cfg Config, boot []string) error {
	m, err := newManager(cfg)
	if err != nil {
		return err
	}
	// A boot.exit from an earlier boot of the same root must not be taken
	// for this boot's.
	_ = os.Remove(filepath.Join(cfg.LogDir, "boot.exit"))
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	go m.otherSignals()
	m.logf("minisystemd init starting as pid %d (socket %s, units %s)", os.Getpid(), cfg.Socket, cfg.UnitDir)
	if os.Getpid() != 1 {
		if err := becomeSubreaper(); err != nil {
			return fmt.Errorf("becoming a child subreaper: %w", err)
		}
	}
	go m.reaper.run()
	l, err := m.listen()
	if err != nil {
		return err
	}
	go m.serve(l)
	// Enabled units start at boot, beside the boot command, as systemd
	// starts multi-user.target's wants beside cloud-init.
	for _, name := range m.enabledUnits() {
		m.logf("boot: starting enabled unit %s", name)
		go func() {
			u, err := m.unit(name)
			if err == nil {
				err = u.start()
			}
			if err != nil {
				m.logf("boot: %s: %v", name, err)
			}
		}()
	}
	bootPid := 0
	if len(boot) > 0 {
		if bootPid, err = m.runBoot(boot); err != nil {
			m.logf("boot: %v", err)
		}
	}
	sig := <-term
	m.logf("received %s: stopping all units", sig)
	_ = l.Close()
	_ = os.Remove(cfg.Socket)
	if bootPid != 0 {
		// The boot command runs in its own session; end what is left of it.
		_ = syscall.Kill(-bootPid, syscall.SIGTERM)
	}
	m.stopAll()
	m.logf("all units stopped, exiting")
	return nil
}

// otherSignals keeps signals that would end a Go program by default from
// ending init: as PID 1 of the machine, its death would end every process in
// it. SIGHUP reloads unit files, as it makes systemd do; the rest is logged.
// The signals are caught, not ignored, so that the children started later
// get default dispositions.
func (m *Manager) otherSignals() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGQUIT)
	for sig := range sigs {
		if sig == syscall.SIGHUP {
			if err := m.reload(); err != nil {
				m.logf("SIGHUP: daemon-reload: %v", err)
			}
			continue
		}
		m.logf("ignoring %s", sig)
	}
}
