package lb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Config tunes a Balancer; the zero value is what the layer uses.
type Config struct {
	// Logf receives one line per notable event (backend down or up, dial failures);
	// nil logs nothing.
	Logf func(format string, args ...any)
	// DialTimeout bounds each dial to a backend (default 2s).
	DialTimeout time.Duration
	// CheckInterval is how often every backend gets a TCP check (default 2s).
	CheckInterval time.Duration
	// DownFor is how long a backend whose dial or check failed is skipped
	// (default 5s; a later successful check brings it back sooner).
	DownFor time.Duration
}

// Balancer accepts TCP connections on one address and forwards each to one of its
// backends, round robin among the healthy ones.
type Balancer struct {
	cfg    Config
	ln     net.Listener
	ctx    context.Context // cancelled by Close: stops dials and checks
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the balancer started

	mu       sync.Mutex
	closed   bool
	backends []*backend          // the current set, in the order given
	byAddr   map[string]*backend // the same, by address
	next     int                 // round-robin position in backends
	pending  map[net.Conn]bool   // clients whose backend is still being dialed

	closeOnce sync.Once
	closeErr  error
}

// Listen starts a Balancer with the default Config.
func Listen(addr string) (*Balancer, error) { return Config{}.Listen(addr) }

// Listen starts accepting on addr ("10.77.0.1:0", ":0", ...). Until SetBackends
// gives it backends, the Balancer closes every connection it accepts.
func (c Config) Listen(addr string) (*Balancer, error) {
	if c.DialTimeout <= 0 {
		c.DialTimeout = 2 * time.Second
	}
	if c.CheckInterval <= 0 {
		c.CheckInterval = 2 * time.Second
	}
	if c.DownFor <= 0 {
		c.DownFor = 5 * time.Second
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Balancer{
		cfg:     c,
		ln:      ln,
		ctx:     ctx,
		cancel:  cancel,
		byAddr:  map[string]*backend{},
		pending: map[net.Conn]bool{},
	}
	b.wg.Add(2)
	go b.acceptLoop()
	go b.checkLoop()
	return b, nil
}

// Addr is the address the Balancer listens on, with the port chosen for ":0".
func (b *Balancer) Addr() *net.TCPAddr {
	addr, _ := b.ln.Addr().(*net.TCPAddr)
	return addr
}

// Close stops listening, closes every open connection and waits until every
// goroutine of the Balancer has returned. It may be called more than once.
func (b *Balancer) Close() error {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		b.closed = true
		for c := range b.pending {
			_ = c.Close()
		}
		for _, be := range b.backends {
			be.closeConns()
		}
		b.mu.Unlock()
		b.cancel()
		if err := b.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			b.closeErr = fmt.Errorf("closing the listener: %w", err)
		}
		b.wg.Wait()
	})
	return b.closeErr
}

func (b *Balancer) acceptLoop() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || b.ctx.Err() != nil {
				return
			}
			// A transient failure (out of file descriptors, say): wait a little
			// rather than spin.
			b.logf("lb %s: accept: %v", b.ln.Addr(), err)
			select {
			case <-b.ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			_ = c.Close()
			return
		}
		b.pending[c] = true
		b.wg.Add(1)
		b.mu.Unlock()
		go b.serve(c)
	}
}

func (b *Balancer) logf(format string, args ...any) {
	if b.cfg.Logf != nil {
		b.cfg.Logf(format, args...)
	}
}
