package minisystemd

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// runInit is the init role: it returns (and the process exits 0) after a
// SIGTERM or SIGINT has stopped every unit.
func runInit(cfg Config, boot []string) error {
	m, err := newManager(cfg)
	if err != nil {
		return err
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
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
