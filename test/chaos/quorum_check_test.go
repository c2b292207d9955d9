package chaos

import (
	"context"
	"time"
)

// quorumChecker asks the simulator, every 200 ms, whether a cluster's etcd ever lost
// quorum (the simulator remembers a loss, so a short one between two polls is still
// seen) and counts its members: once a cluster had all the servers asked for, it must
// keep a majority of them through every rollout and scale-down.
type quorumChecker struct {
	tally
	reg *registry
}

func (q *quorumChecker) name() string { return "etcd quorum kept" }

func (q *quorumChecker) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		for _, c := range q.reg.all() {
			q.check(!simulator.QuorumLost(c.key), "%s: etcd lost quorum", c.key)
			members := int32(len(simulator.EtcdMembers(c.key)))
			want := c.current()
			c.mu.Lock()
			if members >= want {
				c.full = true
			}
			full := c.full
			c.mu.Unlock()
			if full {
				q.check(members >= want/2+1, "%s: %d etcd members, fewer than a quorum of the %d servers asked for", c.key, members, want)
			}
		}
	}
}
