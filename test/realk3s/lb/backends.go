package lb

import (
	"time"
)

// backend is one forwarding target. All fields are guarded by the Balancer's mu.
type backend struct {
	addr      string
	downUntil time.Time      // skipped until then; zero when up
	removed   bool           // no longer in the set: new connections to it are refused
	conns     map[*pair]bool // open connections forwarded to it
}

func (be *backend) up(now time.Time) bool { return !now.Before(be.downUntil) }

// closeConns closes every connection forwarded to be; their copy goroutines then
// finish and unregister them.
func (be *backend) closeConns() {
	for p := range be.conns {
		p.close()
	}
}

// SetBackends replaces the backend set with addrs ("10.77.0.5:6443", ...); duplicates
// count once. Backends that stay keep their health and their connections; backends
// that go have their open connections closed, so that clients reconnect through the
// Balancer to one that remains. It is safe to call concurrently with everything else.
func (b *Balancer) SetBackends(addrs []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	keep := map[string]bool{}
	var next []*backend
	for _, a := range addrs {
		if keep[a] {
			continue
		}
		keep[a] = true
		be := b.byAddr[a]
		if be == nil {
			// A new backend is tried at once: a failed dial or check marks it down.
			be = &backend{addr: a, conns: map[*pair]bool{}}
			b.byAddr[a] = be
		}
		next = append(next, be)
	}
	for a, be := range b.byAddr {
		if !keep[a] {
			be.removed = true
			be.closeConns()
			delete(b.byAddr, a)
			b.logf("lb %s: backend %s removed", b.ln.Addr(), a)
		}
	}
	b.backends = next
	if b.next >= len(next) {
		b.next = 0
	}
}

// Backends returns the current backend addresses and, for each, whether it is
// considered up.
func (b *Balancer) Backends() map[string]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	out := map[string]bool{}
	for _, be := range b.backends {
		out[be.addr] = be.up(now)
	}
	return out
}

// pick returns the next backend to dial that is not in tried: the next up one in
// round-robin order, or, when none that is up is left, one marked down (its mark may
// be older than its recovery, and trying beats refusing the client). It returns nil
// when every backend has been tried.
func (b *Balancer) pick(tried map[*backend]bool) *backend {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.backends)
	now := time.Now()
	var fallback *backend
	for i := range n {
		idx := (b.next + i) % n
		be := b.backends[idx]
		if tried[be] {
			continue
		}
		if be.up(now) {
			b.next = (idx + 1) % n
			return be
		}
		if fallback == nil {
			fallback = be
		}
	}
	return fallback
}

// setHealth marks be up or down after a dial or a check.
func (b *Balancer) setHealth(be *backend, ok bool, why error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	wasUp := be.up(now)
	if ok {
		be.downUntil = time.Time{}
		if !wasUp && !be.removed {
			b.logf("lb %s: backend %s up", b.ln.Addr(), be.addr)
		}
		return
	}
	be.downUntil = now.Add(b.cfg.DownFor)
	if wasUp && !be.removed {
		b.logf("lb %s: backend %s down: %v", b.ln.Addr(), be.addr, why)
	}
}
