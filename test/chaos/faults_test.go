package chaos

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/capk3s/capk3s/test/envtest"
)

// etcdHook is the control plane's pre-terminate hook on server Machines: while it is
// held, the server's etcd member is being handed over.
const etcdHook = clusterv1.PreTerminateDeleteHookAnnotationPrefix + "/kthrees-etcd"

// faultPlan is how hard a round hurts.
type faultPlan struct {
	// minKills: the faults go on until at least this many kills were made.
	minKills int
	// apiRestarts of the management kube-apiserver per round.
	apiRestarts int
}

// faults kills manager processes and restarts the management kube-apiserver at
// seeded random moments until stopped.
type faults struct {
	m         *managers
	restarter *envtest.APIServerRestarter
	logf      func(format string, args ...any)

	mu  sync.Mutex
	rng *rand.Rand
	// counts
	kills, burstKills, hookKills, soloKills, apiRestarts int
	heldSeen                                             map[string]bool
	wg                                                   sync.WaitGroup
	// stopped is set once run ends its loops: a late kill at the hook is dropped.
	stopped bool
	// history is every kill; downs are the apiserver's restarts, start to serving.
	history []killRecord
	downs   [][2]time.Time
}

// killRecord is one kill.
type killRecord struct {
	cmd    string
	at     time.Time
	leader bool
	// standbyUp: another replica of cmd had been running for 5 s or more.
	standbyUp bool
}

func (f *faults) intn(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rng.IntN(n)
}

// between is a random duration in [lo, hi).
func (f *faults) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(f.intn(int(hi-lo)))
}

// run hurts until ctx ends, then waits for its restarts and leaves every process and
// the apiserver running.
func (f *faults) run(ctx context.Context, plan faultPlan) {
	var loops sync.WaitGroup
	loops.Add(2)
	go func() { defer loops.Done(); f.killLoop(ctx) }()
	go func() { defer loops.Done(); f.restartLoop(ctx, plan.apiRestarts) }()
	loops.Wait()
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
	f.wg.Wait()
	for _, p := range f.m.all() {
		if !p.Running() {
			_ = p.Start()
		}
	}
}

// killLoop kills a manager every few seconds, the leader more often than not, and
// sometimes a second one within a second of the first.
func (f *faults) killLoop(ctx context.Context) {
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(f.between(2*time.Second, 8*time.Second)):
		}
		f.reviveExited()
		switch {
		case i%5 == 4:
			f.soloLeaderKill(ctx)
		case f.intn(3) == 0:
			f.killOne("random")
			time.Sleep(f.between(0, 900*time.Millisecond))
			f.killOne("burst")
		default:
			f.killOne("random")
		}
	}
}

// soloLeaderKill kills a leader while its standby is up, then lets the next 11 s
// pass without a kill: the takeover is then leader election's alone, and measured.
func (f *faults) soloLeaderKill(ctx context.Context) {
	cmd := envtest.ManagerCommands[f.intn(len(envtest.ManagerCommands))]
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if p := f.m.leader(cmd); p != nil && f.standbyUp(cmd, p) {
			f.killAndRevive(cmd, p, "leader")
			select {
			case <-ctx.Done():
			case <-time.After(11 * time.Second):
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// standbyUp says another replica of cmd than p has been running for 5 s or more.
func (f *faults) standbyUp(cmd string, p *envtest.ManagerProcess) bool {
	for _, o := range f.m.procs[cmd] {
		if o != p && o.Running() && !o.Exited() && time.Since(o.StartedAt()) >= 5*time.Second {
			return true
		}
	}
	return false
}

// killOne kills the leader of a random manager (or, one time in four, a random
// replica) and starts it again after a short random delay.
func (f *faults) killOne(why string) {
	cmds := envtest.ManagerCommands
	cmd := cmds[f.intn(len(cmds))]
	p := f.m.leader(cmd)
	if p == nil || f.intn(4) == 0 {
		p = f.m.procs[cmd][f.intn(replicas)]
	}
	f.killAndRevive(cmd, p, why)
}

func (f *faults) killAndRevive(cmd string, p *envtest.ManagerProcess, why string) {
	f.mu.Lock()
	if f.stopped || !p.Running() {
		f.mu.Unlock()
		return
	}
	// Under the lock that run takes to stop: no kill, and no Add, after it.
	f.wg.Add(1)
	f.mu.Unlock()
	rec := killRecord{cmd: cmd, at: time.Now(), leader: f.m.leader(cmd) == p, standbyUp: f.standbyUp(cmd, p)}
	p.Kill()
	delay := f.between(200*time.Millisecond, 3*time.Second)
	f.mu.Lock()
	f.kills++
	f.history = append(f.history, rec)
	switch why {
	case "burst":
		f.burstKills++
	case "hook":
		f.hookKills++
	case "leader":
		f.soloKills++
	}
	f.mu.Unlock()
	f.logf("fault: killed %s (%s), back in %s", p.Name, why, delay.Round(time.Millisecond))
	go func() {
		defer f.wg.Done()
		time.Sleep(delay)
		if err := p.Start(); err != nil {
			f.logf("fault: restarting %s: %v", p.Name, err)
		}
	}()
}

// reviveExited restarts a process that ended by itself (one that lost its Lease to an
// apiserver outage exits, as controller-runtime's managers do).
func (f *faults) reviveExited() {
	for _, p := range f.m.all() {
		if p.Exited() {
			f.logf("fault: %s exited by itself; starting it again", p.Name)
			p.Kill()
			_ = p.Start()
		}
	}
}

// hookHandler kills the control plane's leader when a server Machine of the round
// starts waiting at the etcd pre-terminate hook, once per Machine, while the faults
// run: the leader dies in the middle of the member's hand-over.
func (f *faults) hookHandler(ctx context.Context, ns string) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
		m, ok := obj.(*clusterv1.Machine)
		if !ok || m.Namespace != ns || !heldAtHook(m) || ctx.Err() != nil {
			return
		}
		f.mu.Lock()
		seen := f.heldSeen[m.Name]
		f.heldSeen[m.Name] = true
		f.mu.Unlock()
		if seen {
			return
		}
		go func() {
			if p := f.m.leader("controlplane-manager"); p != nil && ctx.Err() == nil {
				f.killAndRevive("controlplane-manager", p, "hook")
			}
		}()
	}}
}

// heldAtHook says the Machine is being deleted and the etcd hook still holds it.
func heldAtHook(m *clusterv1.Machine) bool {
	_, held := m.Annotations[etcdHook]
	return held && !m.DeletionTimestamp.IsZero()
}

// restartLoop restarts the management kube-apiserver n times, the first 20-40 s in,
// then every 30-60 s, each down for 1-5 s.
func (f *faults) restartLoop(ctx context.Context, n int) {
	wait := f.between(20*time.Second, 40*time.Second)
	for range n {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		down := f.between(time.Second, 5*time.Second)
		f.logf("fault: restarting the management kube-apiserver (down %s)", down.Round(time.Millisecond))
		start := time.Now()
		if err := f.restarter.Restart(context.WithoutCancel(ctx), down); err != nil {
			f.logf("fault: restarting the management kube-apiserver: %v", err)
			return
		}
		f.mu.Lock()
		f.apiRestarts++
		f.downs = append(f.downs, [2]time.Time{start, time.Now()})
		f.mu.Unlock()
		f.logf("fault: the management kube-apiserver serves again after %s", time.Since(start).Round(time.Millisecond))
		wait = f.between(30*time.Second, 60*time.Second)
	}
}

func (f *faults) counts() roundResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	return roundResult{kills: f.kills, burst: f.burstKills, hook: f.hookKills, solo: f.soloKills, restarts: f.apiRestarts}
}

// leaderKills are the kills of a leader; clean ones had a standby up, and neither
// another kill of the same manager nor an apiserver restart came within 10 s, so
// the takeover measures leader election alone.
func (f *faults) leaderKills() []leaderKill {
	f.mu.Lock()
	defer f.mu.Unlock()
	const window = 10 * time.Second
	var out []leaderKill
	for i, k := range f.history {
		if !k.leader {
			continue
		}
		clean := k.standbyUp
		for j, o := range f.history {
			if j != i && o.cmd == k.cmd && !o.at.Before(k.at) && o.at.Sub(k.at) < window {
				clean = false
			}
		}
		for _, d := range f.downs {
			if d[1].After(k.at.Add(-5*time.Second)) && d[0].Before(k.at.Add(window)) {
				clean = false
			}
		}
		out = append(out, leaderKill{cmd: k.cmd, at: k.at, clean: clean})
	}
	return out
}
