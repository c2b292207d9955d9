package sharding

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/capk3s/capk3s/test/envtest"
	"github.com/capk3s/capk3s/test/stack"
)

const (
	// startBound bounds a manager's start: the binary's caches and its Lease. A
	// shard's first Lease is free, so a process that does not lead by then waits on
	// another shard's.
	startBound = time.Minute
	// convergeBound bounds a cluster's way to Available: one server and one agent on
	// the simulator, on a shared 2-core machine.
	convergeBound = 3 * time.Minute
)

// shard is one pair of manager processes started with --watch-filter=filter, and
// the cluster a user labelled for it.
type shard struct {
	filter  string
	cluster string
	procs   []*envtest.ManagerProcess
}

// TestShardsSplitClusters runs shards a and b, each with a cluster of one server and
// one agent labelled for it, beside a cluster without the label and one labelled for
// a shard that does not run. Both shards' clusters must become Available, and the
// audit log must show each shard's processes writing their own cluster's objects and
// nothing else.
func TestShardsSplitClusters(t *testing.T) {
	dir, err := os.MkdirTemp("", "capk3s-sharding-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the managers' and apiserver's logs are kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	ctx := context.Background()

	audit, restarter, err := env.AuditWrites(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	cleanups = append(cleanups, restarter.Stop)
	// CAPI core, the simulator and the webhooks run in this process, unfiltered, as
	// the apiserver's admin: the audit log tells their writes from the shards'. The
	// manager is never stopped (stopping it waits out its 30 s graceful shutdown).
	stackManager.Start(t, env, envtest.ManagerOptions{Webhooks: true}, func(ctx context.Context, mgr ctrl.Manager) error {
		return stack.Setup(ctx, mgr, stack.Options{Sim: simulator, Webhooks: true, WithoutCapk3s: true})
	})

	shards := []*shard{{filter: "shard-a", cluster: "alpha"}, {filter: "shard-b", cluster: "bravo"}}
	start := time.Now()
	startShards(t, dir, shards)
	t.Logf("both shards lead, %s after the build started", time.Since(start).Round(time.Second))

	ns := env.NewNamespace(t)
	// The clusters no running shard may touch go first: by the time the shards' own
	// clusters are Available, every event about these has long reached the shards.
	others := []*stack.Cluster{newCluster(ns, "charlie", ""), newCluster(ns, "delta", "shard-c")}
	for _, c := range others {
		create(ctx, t, c)
	}
	own := map[*shard]*stack.Cluster{}
	for _, s := range shards {
		own[s] = newCluster(ns, s.cluster, s.filter)
		create(ctx, t, own[s])
	}
	start = time.Now()
	for _, s := range shards {
		if err := waitFor(ctx, convergeBound, available(own[s])); err != nil {
			t.Fatalf("%s's cluster %s: %v", s.filter, s.cluster, err)
		}
	}
	t.Logf("both shards' clusters Available in %s", time.Since(start).Round(time.Second))
	// Each ignored cluster had an agent's KThreesConfig for the bootstrap managers to
	// ignore (CAPI's MachineSet makes it without asking any control plane), so their
	// silence about it means something.
	for _, c := range others {
		if err := waitFor(ctx, convergeBound, hasAgentConfig(c)); err != nil {
			t.Fatalf("cluster %s: %v", c.Cluster.Name, err)
		}
	}

	events, _, err := envtest.ReadAuditLog(audit, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range checkWrites(events, ns, shards) {
		t.Error(p)
	}
	for _, c := range others {
		if err := untouched(ctx, c); err != nil {
			t.Error(err)
		}
	}
}

// startShards builds both manager binaries and starts each shard's pair, with the
// shard's --watch-filter. All Leases go to one namespace (the harness's default), as
// two shards installed side by side in one namespace would have them. The processes
// are killed when the test ends, and by TestMain's cleanup if the binary ends first.
func startShards(t *testing.T, dir string, shards []*shard) {
	t.Helper()
	bins, err := envtest.BuildManagers(filepath.Join(dir, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	var all []*envtest.ManagerProcess
	for _, s := range shards {
		for _, cmd := range envtest.ManagerCommands {
			p, err := env.NewManagerProcess(envtest.ProcessOptions{
				Name: cmd + "-" + s.filter, Binary: bins[cmd], Dir: dir,
				Args: []string{"--watch-filter=" + s.filter},
			})
			if err != nil {
				t.Fatal(err)
			}
			s.procs = append(s.procs, p)
			all = append(all, p)
		}
	}
	stopAll := func() {
		for _, p := range all {
			p.Kill()
		}
	}
	cleanups = append(cleanups, stopAll)
	t.Cleanup(stopAll)
	for _, p := range all {
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startBound)
	defer cancel()
	for _, p := range all {
		if err := p.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range all {
		err := envtest.WaitFor(ctx, 200*time.Millisecond, func(context.Context) (bool, error) {
			if p.Exited() {
				return false, fmt.Errorf("exited; see %s", p.LogPath)
			}
			return p.Leads(), nil
		})
		if err != nil {
			t.Fatalf("%s does not lead (does another shard hold its Lease?): %v", p.Name, err)
		}
	}
}
