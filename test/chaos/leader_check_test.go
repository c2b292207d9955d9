package chaos

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/capk3s/capk3s/test/envtest"
)

// auditEvent is one write as the audit log records it.
type auditEvent = envtest.AuditEvent

// write is one write by a manager replica.
type write struct {
	at      time.Time
	replica string
}

// leaderKill is a SIGKILL of the replica that led, for the takeover time.
type leaderKill struct {
	cmd string
	at  time.Time
	// clean: the other replica had been up for a while, no other kill of the command
	// and no apiserver restart followed soon: the takeover is the lease's alone.
	clean bool
}

// leaderChecker reads the management apiserver's audit log while the scenario runs:
// every write a manager replica makes is attributed to it by its own user. Of two
// replicas of one manager, the writer may change only across the death of the
// previous writer: two live replicas acting turn up as writes interleaved between
// them. Lease writes (the election itself) and Events are left out.
type leaderChecker struct {
	tally
	path  string
	procs map[string]*envtest.ManagerProcess // by user (the process name)

	mu sync.Mutex
	// last is each command's latest write.
	last map[string]write
	// acquired are successful Lease writes by command: after a leader's kill, the
	// first is its successor's acquisition.
	acquired map[string][]time.Time
	writes   int
}

func newLeaderChecker(path string, m *managers) *leaderChecker {
	c := &leaderChecker{path: path, procs: map[string]*envtest.ManagerProcess{},
		last: map[string]write{}, acquired: map[string][]time.Time{}}
	for _, p := range m.all() {
		c.procs[p.Name] = p
	}
	return c
}

func (c *leaderChecker) name() string { return "one acting replica per manager" }

// run follows the audit log until ctx ends, then reads what is left.
func (c *leaderChecker) run(ctx context.Context) {
	var offset int64
	for {
		offset = c.read(offset)
		select {
		case <-ctx.Done():
			// The last lines may still be on their way.
			time.Sleep(time.Second)
			c.read(offset)
			return
		case <-time.After(time.Second):
		}
	}
}

// read handles the complete lines after offset and returns the new offset.
func (c *leaderChecker) read(offset int64) int64 {
	events, offset, err := envtest.ReadAuditLog(c.path, offset)
	if err != nil {
		return offset
	}
	for _, e := range events {
		c.event(e)
	}
	return offset
}

func (c *leaderChecker) event(e auditEvent) {
	p := c.procs[e.User.Username]
	if p == nil {
		return
	}
	cmd := commandOf(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e.ObjectRef.Resource {
	case "leases":
		if e.ResponseStatus.Code < 300 {
			c.acquired[cmd] = append(c.acquired[cmd], e.Received)
		}
		return
	case "events":
		return
	}
	c.writes++
	prev, ok := c.last[cmd]
	c.last[cmd] = write{at: e.Received, replica: p.Name}
	if !ok || prev.replica == p.Name {
		c.check(true, "")
		return
	}
	// The writer changed: the previous one must have died in between.
	died := slices.ContainsFunc(c.procs[prev.replica].Ends(), func(end time.Time) bool {
		return !end.Before(prev.at) && !end.After(e.Received)
	})
	c.check(died, "%s: %s wrote %s %s/%s at %s while %s, which wrote at %s, was alive: two replicas acted",
		cmd, p.Name, e.ObjectRef.Resource, e.ObjectRef.Namespace, e.ObjectRef.Name,
		e.Received.Format(time.StampMicro), prev.replica, prev.at.Format(time.StampMicro))
}

// takeovers are the times from each clean leader kill to the next Lease write (the
// successor's acquisition; a dead leader renews nothing).
func (c *leaderChecker) takeovers(kills []leaderKill) []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for _, k := range kills {
		if !k.clean {
			continue
		}
		// Writes received before the kill was noticed are the victim's own renewals.
		i := slices.IndexFunc(c.acquired[k.cmd], func(t time.Time) bool { return t.After(k.at) })
		if i >= 0 {
			out = append(out, c.acquired[k.cmd][i].Sub(k.at))
		}
	}
	return out
}
