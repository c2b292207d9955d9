package lb

import (
	"errors"
	"io"
	"net"
	"sync"
)

// pair is one client connection and the backend connection it is forwarded to.
type pair struct {
	client, server net.Conn
	once           sync.Once
}

func (p *pair) close() {
	p.once.Do(func() {
		_ = p.client.Close()
		_ = p.server.Close()
	})
}

// serve dials a backend for client and forwards between them until both sides are
// done or the pair is closed (backend removed, Balancer closed).
func (b *Balancer) serve(client net.Conn) {
	defer b.wg.Done()
	p, be := b.connect(client)
	if p == nil {
		return
	}
	b.forward(p)
	b.mu.Lock()
	delete(be.conns, p)
	b.mu.Unlock()
}

// connect dials backends in pick order until one answers and registers the pair
// under it. It closes client and returns nil when none answers.
func (b *Balancer) connect(client net.Conn) (*pair, *backend) {
	tried := map[*backend]bool{}
	for {
		be := b.pick(tried)
		if be == nil {
			b.mu.Lock()
			delete(b.pending, client)
			b.mu.Unlock()
			_ = client.Close()
			if len(tried) > 0 {
				b.logf("lb %s: no backend answered for %s", b.ln.Addr(), client.RemoteAddr())
			}
			return nil, nil
		}
		tried[be] = true
		d := net.Dialer{Timeout: b.cfg.DialTimeout}
		server, err := d.DialContext(b.ctx, "tcp", be.addr)
		if err != nil {
			if b.ctx.Err() != nil {
				// Closing: the dial was cancelled, the backend is not to blame.
				b.mu.Lock()
				delete(b.pending, client)
				b.mu.Unlock()
				_ = client.Close()
				return nil, nil
			}
			b.setHealth(be, false, err)
			continue
		}
		b.setHealth(be, true, nil)
		b.mu.Lock()
		if b.closed {
			delete(b.pending, client)
			b.mu.Unlock()
			_ = server.Close()
			_ = client.Close()
			return nil, nil
		}
		if be.removed {
			// Removed while we dialed: the caller wants no connection to it.
			b.mu.Unlock()
			_ = server.Close()
			continue
		}
		p := &pair{client: client, server: server}
		delete(b.pending, client)
		be.conns[p] = true
		b.mu.Unlock()
		return p, be
	}
}

// forward copies both ways. When one side ends its writes (EOF), the other side's
// writes are ended too (CloseWrite) and the reverse direction goes on, so a client
// that half-closes still gets its answer. An error in either direction, or the end
// of both, closes the pair.
func (b *Balancer) forward(p *pair) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		pipe(p, p.server, p.client)
	}()
	pipe(p, p.client, p.server)
	<-done
	p.close()
}

// pipe copies from src to dst, then half-closes dst, or closes the pair on error.
func pipe(p *pair, dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	if err != nil && !errors.Is(err, io.EOF) {
		p.close()
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil {
			return
		}
	}
	p.close()
}
