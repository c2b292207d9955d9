package lb

import (
	"net"
	"sync"
	"time"
)

// checkLoop dials every backend each CheckInterval and marks it up or down, so that
// a server that stopped is skipped before a client pays a failed dial for it, and a
// server that came back (an apiserver refuses connections while it starts) is used
// again without waiting for DownFor to pass.
func (b *Balancer) checkLoop() {
	defer b.wg.Done()
	t := time.NewTicker(b.cfg.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
		}
		b.checkAll()
	}
}

// checkAll checks every current backend at once and waits for all the checks.
func (b *Balancer) checkAll() {
	b.mu.Lock()
	backends := append([]*backend(nil), b.backends...)
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, be := range backends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{Timeout: b.cfg.DialTimeout}
			c, err := d.DialContext(b.ctx, "tcp", be.addr)
			if err != nil {
				if b.ctx.Err() == nil {
					b.setHealth(be, false, err)
				}
				return
			}
			_ = c.Close()
			b.setHealth(be, true, nil)
		}()
	}
	wg.Wait()
}
