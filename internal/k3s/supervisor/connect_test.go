package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gaveUpWithin is how long a test waits for Save to give up on a supervisor that
// never answers the connection: far more than the connect timeouts, far less than
// the request's own (DefaultTimeout), so that only a connect timeout can end it.
const gaveUpWithin = 90 * time.Second

// saveOrHang runs Save and returns its error, or fails the test when Save is still
// trying after gaveUpWithin.
func saveOrHang(t *testing.T, c *Client) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := c.Save(context.Background(), SaveRequest{Name: "n"})
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(gaveUpWithin):
		t.Fatalf("Save still connecting after %s: the request's %s timeout is all that bounds the connection", gaveUpWithin, DefaultTimeout)
		return nil
	}
}

// blackhole is an address whose TCP handshake never completes: a socket listening
// with a backlog of 0 whose one queued connection is taken, so that the kernel drops
// every further SYN, as a host behind a firewall that drops packets does.
func blackhole(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	filler, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = filler.Close() })
	if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
		_ = c.Close()
		t.Skip("this kernel completed a connection beyond the listen backlog: no blackhole to test against")
	}
	return addr
}

// A supervisor whose address drops the connection attempt: Save gives up at the
// dial timeout, as not sent, instead of holding its caller for the request's minutes.
func TestSaveGivesUpOnAnUnreachableSupervisor(t *testing.T) {
	c := &Client{Endpoint: blackhole(t), CACert: otherCA(t), Password: "p"}
	err := saveOrHang(t, c)
	var ne net.Error
	if !NotSent(err) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err = %v, want a connect timeout, not sent", err)
	}
}

// A supervisor that takes the connection and never answers the TLS handshake: Save
// gives up at the handshake timeout, as not sent.
func TestSaveGivesUpOnAHandshakeThatNeverEnds(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	// Accepts, then reads and answers nothing.
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = conn.Close() })
		}
	}()
	c := &Client{Endpoint: ln.Addr().String(), CACert: otherCA(t), Password: "p"}
	err = saveOrHang(t, c)
	if !NotSent(err) || !strings.Contains(err.Error(), "TLS handshake timeout") {
		t.Fatalf("err = %v, want a TLS handshake timeout, not sent", err)
	}
}

// k3s takes the snapshot folder and compression from the request alone when given
// (pkg/etcd/snapshot_handler.go withRequest): Save sends them when set, and leaves
// them out otherwise.
func TestSaveSendsDirAndCompress(t *testing.T) {
	f := &fakeK3s{password: "p", answer: func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{}`)) }}
	c := start(t, f)
	if _, err := c.Save(context.Background(), SaveRequest{Name: "n", Dir: "/data/snapshots", Compress: true}); err != nil {
		t.Fatal(err)
	}
	if f.got["dir"] != "/data/snapshots" || f.got["compress"] != true {
		t.Fatalf("request = %v, want dir and compress", f.got)
	}
	if _, err := c.Save(context.Background(), SaveRequest{Name: "n"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.got["dir"]; ok {
		t.Fatalf("request = %v, want no dir", f.got)
	}
	if _, ok := f.got["compress"]; ok {
		t.Fatalf("request = %v, want no compress", f.got)
	}
}
