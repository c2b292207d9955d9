package minisystemd

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// notifySocket returns the unit's NOTIFY_SOCKET path, creating the datagram
// socket and its reader on first use. Like systemd's it lives as long as the
// supervisor, across restarts of the unit. Messages are accepted from any
// sender (systemd's NotifyAccess=main would check the pid); k3s sends from
// its main process anyway.
func (m *Manager) notifySocket(u *unitState) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.notifys[u.name]; ok {
		return p, nil
	}
	dir := filepath.Join(filepath.Dir(m.cfg.Socket), "minisystemd-notify")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating notify dir: %w", err)
	}
	path := filepath.Join(dir, strings.TrimSuffix(u.name, ".service"))
	_ = os.Remove(path)
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return "", fmt.Errorf("creating notify socket: %w", err)
	}
	m.notifys[u.name] = path
	go u.readNotify(conn)
	return path, nil
}

func (u *unitState) readNotify(conn *net.UnixConn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			u.m.logf("%s: notify socket: %v", u.name, err)
			return
		}
		u.handleNotify(string(buf[:n]))
	}
}

// handleNotify applies one sd_notify message: READY=1 makes the current run
// active; STATUS= is kept for status output. Other fields are ignored.
func (u *unitState) handleNotify(msg string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, line := range strings.Split(msg, "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "READY":
			if v != "1" {
				continue
			}
			if u.run == nil {
				u.earlyReady = true
				continue
			}
			if u.run.markReady() {
				u.setStateLocked(StateActive)
				u.m.logf("%s: main process %d is ready", u.name, u.run.pid)
			}
		case "STATUS":
			u.statusText = v
		}
	}
}

// sendNotify is the client side, like systemd-notify: it sends the
// assignments as one datagram to $NOTIFY_SOCKET.
func sendNotify(assignments []string) error {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return fmt.Errorf("NOTIFY_SOCKET is not set")
	}
	if len(assignments) == 0 {
		return fmt.Errorf("nothing to send")
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", path, err)
	}
	defer func() { _ = conn.Close() }()
	if _, err := conn.Write([]byte(strings.Join(assignments, "\n") + "\n")); err != nil {
		return fmt.Errorf("sending to %s: %w", path, err)
	}
	return nil
}
