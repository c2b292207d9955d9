package lb

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// echoServer is a backend: on each connection it writes its name and a newline,
// echoes what it reads, and at the client's end of writes sends "eof\n" and closes.
type echoServer struct {
	name string
	ln   net.Listener
	mu   sync.Mutex
	conn []net.Conn
	wg   sync.WaitGroup
}

func startEcho(t *testing.T, name string) *echoServer {
	t.Helper()
	return startEchoOn(t, name, "127.0.0.1:0")
}

func startEchoOn(t *testing.T, name, addr string) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{name: name, ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conn = append(s.conn, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer func() { _ = c.Close() }()
				if _, err := fmt.Fprintf(c, "%s\n", name); err != nil {
					return
				}
				if _, err := io.Copy(c, c); err != nil {
					return
				}
				_, _ = io.WriteString(c, "eof\n")
			}()
		}
	}()
	t.Cleanup(s.stop)
	return s
}

func (s *echoServer) addr() string { return s.ln.Addr().String() }

func (s *echoServer) stop() {
	_ = s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conn {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// deadAddr is an address on which nothing listens: connections are refused.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func listen(t *testing.T, cfg Config) *Balancer {
	t.Helper()
	b, err := cfg.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// connect dials the balancer and returns the connection and the name of the backend
// that answered.
func connect(t *testing.T, b *Balancer) (*net.TCPConn, *bufio.Reader, string) {
	t.Helper()
	c, err := net.DialTCP("tcp", nil, b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	name, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the backend's name: %v", err)
	}
	return c, r, strings.TrimSuffix(name, "\n")
}

// expectClosed asserts that the peer closes c within a few seconds.
func expectClosed(t *testing.T, c net.Conn, r *bufio.Reader) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	rest, err := io.ReadAll(r)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection still open (read %q)", rest)
		}
	}
}

func TestRoundRobin(t *testing.T) {
	a, b2 := startEcho(t, "a"), startEcho(t, "b")
	b := listen(t, Config{})
	b.SetBackends([]string{a.addr(), b2.addr()})
	var got []string
	for range 6 {
		_, _, name := connect(t, b)
		got = append(got, name)
	}
	if want := "a b a b a b"; strings.Join(got, " ") != want {
		t.Fatalf("backends in order %q, want %q", strings.Join(got, " "), want)
	}
}

func TestDeadBackendSkipped(t *testing.T) {
	a := startEcho(t, "a")
	dead := deadAddr(t)
	b := listen(t, Config{DownFor: time.Minute, CheckInterval: time.Hour})
	b.SetBackends([]string{dead, a.addr()})
	for i := range 4 {
		if _, _, name := connect(t, b); name != "a" {
			t.Fatalf("connection %d went to %q, want a", i, name)
		}
	}
	if up := b.Backends(); up[dead] || !up[a.addr()] {
		t.Fatalf("health %v: want %s down and %s up", up, dead, a.addr())
	}
}

func TestCheckBringsBackendBack(t *testing.T) {
	a := startEcho(t, "a")
	down := deadAddr(t)
	b := listen(t, Config{DownFor: time.Minute, CheckInterval: 50 * time.Millisecond})
	b.SetBackends([]string{down, a.addr()})
	waitFor(t, "the check marks the dead backend down", func() bool { return !b.Backends()[down] })
	startEchoOn(t, "back", down)
	waitFor(t, "the check marks the backend up again", func() bool { return b.Backends()[down] })
	seen := map[string]bool{}
	for range 4 {
		_, _, name := connect(t, b)
		seen[name] = true
	}
	if !seen["back"] || !seen["a"] {
		t.Fatalf("backends used %v, want both a and back", seen)
	}
}

func TestNoBackendClosesClient(t *testing.T) {
	b := listen(t, Config{})
	b.SetBackends([]string{deadAddr(t)})
	c, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	expectClosed(t, c, bufio.NewReader(c))
}

func TestRemovedBackendConnectionsClosed(t *testing.T) {
	a, b2 := startEcho(t, "a"), startEcho(t, "b")
	b := listen(t, Config{})
	b.SetBackends([]string{a.addr(), b2.addr()})
	ca, ra, na := connect(t, b)
	cb, rb, nb := connect(t, b)
	if na != "a" || nb != "b" {
		t.Fatalf("connected to %q and %q, want a and b", na, nb)
	}
	b.SetBackends([]string{b2.addr()})
	expectClosed(t, ca, ra)
	// The connection to the backend that stays still works.
	if _, err := io.WriteString(cb, "ping\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := rb.ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("through the kept backend: %q, %v", line, err)
	}
	for range 3 {
		if _, _, name := connect(t, b); name != "b" {
			t.Fatalf("new connection went to %q after a's removal", name)
		}
	}
}

func TestHalfClose(t *testing.T) {
	a := startEcho(t, "a")
	b := listen(t, Config{})
	b.SetBackends([]string{a.addr()})
	c, r, _ := connect(t, b)
	payload := strings.Repeat("0123456789", 100_000) // larger than socket buffers
	go func() {
		_, _ = io.WriteString(c, payload)
		_ = c.CloseWrite()
	}()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := payload + "eof\n"; string(got) != want {
		t.Fatalf("read %d bytes ending %q, want %d ending %q", len(got), tail(string(got)), len(want), tail(want))
	}
}

func TestCloseClosesEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	a := startEcho(t, "a")
	b, err := Config{CheckInterval: 20 * time.Millisecond}.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.SetBackends([]string{a.addr(), deadAddr(t)})
	type open struct {
		c net.Conn
		r *bufio.Reader
	}
	var conns []open
	for range 4 {
		c, r, _ := connect(t, b)
		conns = append(conns, open{c, r})
	}
	time.Sleep(50 * time.Millisecond) // let the checks run
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, o := range conns {
		expectClosed(t, o.c, o.r)
		_ = o.c.Close()
	}
	if c, err := net.DialTimeout("tcp", b.Addr().String(), time.Second); err == nil {
		_ = c.Close()
		t.Fatal("the balancer still accepts after Close")
	}
	a.stop()
	waitFor(t, "goroutines back to the count before the test", func() bool {
		return runtime.NumGoroutine() <= before
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func tail(s string) string {
	if len(s) > 12 {
		return s[len(s)-12:]
	}
	return s
}

// TestSetBackendsWhileServing changes the backend set while clients connect: every
// client reaches a backend of the set or is closed, and (under -race) nothing races.
func TestSetBackendsWhileServing(t *testing.T) {
	a, b2 := startEcho(t, "a"), startEcho(t, "b")
	b := listen(t, Config{})
	b.SetBackends([]string{a.addr()})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sets := [][]string{{a.addr(), b2.addr()}, {b2.addr()}, {a.addr()}}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			b.SetBackends(sets[i%len(sets)])
			time.Sleep(time.Millisecond)
		}
	}()
	names := map[string]int{}
	for range 50 {
		c, err := net.Dial("tcp", b.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		_ = c.Close()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("a client was neither served nor closed")
		}
		if err == nil {
			names[strings.TrimSuffix(line, "\n")]++
		}
	}
	close(stop)
	<-done
	if names["a"] == 0 || names["b"] == 0 || len(names) != 2 {
		t.Fatalf("clients reached %v, want both a and b", names)
	}
}
