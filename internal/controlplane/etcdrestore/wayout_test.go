package etcdrestore

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// A first server that does not restore within the deadline fails the restore with
// a message naming the way out; the failed restore keeps the control plane held (no
// server is joined to a cluster that has none) and, deleted, stays until a new
// restore takes over. The way out: a new restore to the safety snapshot, which needs
// no running cluster, replaces the failed first server and restores.
func TestFirstServerDeadlineAndTheWayOut(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	k3s := provenCluster(t, ns)
	stop := runManagerWith(t, 3*time.Second)
	first := newRestore(t, ns, "restore-1")
	waitForPhase(t, first, controlplanev1.EtcdRestoreDeletingServers)
	waitForOldServersDeleted(t, ns)
	probeFailed(t, ns, time.Minute)
	releaseDeleted(t, ns)
	failed := waitForPhase(t, first, controlplanev1.EtcdRestoreFailed)
	safety := failed.Status.SafetySnapshot
	for _, w := range []string{"did not restore snapshot " + snapName + " within 3s", "Way out: create a new KThreesEtcdRestore", safety} {
		if safety == "" || !strings.Contains(failed.Status.Message, w) {
			t.Errorf("failed restore's message %q, want %q", failed.Status.Message, w)
		}
	}
	// Held: the control plane wants three servers and has none once the failed first
	// server is deleted (by a user, or a MachineHealthCheck): it joins none to nothing.
	for _, m := range servers(t, ns) {
		must(t, env.Client.Delete(ctx, m))
	}
	releaseDeleted(t, ns)
	waitFor(t, "the failed first server gone", func(context.Context) (bool, error) { return len(servers(t, ns)) == 0, nil },
		func() string { return "" })
	time.Sleep(3 * time.Second)
	if left := servers(t, ns); len(left) != 0 {
		t.Fatalf("servers after the failure: %v, want none joined to a cluster without servers", slices.Collect(maps.Keys(left)))
	}
	// Deleted, the failed restore stays while it holds the control plane.
	must(t, env.Client.Delete(ctx, first))
	time.Sleep(time.Second)
	must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(first), failed))
	stop()

	runManager(t)
	// The new manager's first pass of the failed restore finds it holding the lock;
	// only a later one, woken by the takeover, releases it.
	time.Sleep(2 * time.Second)
	second := newRestoreOf(t, ns, "restore-2", safety)
	var own *clusterv1.Machine
	waitFor(t, "the new restore's first server", func(context.Context) (bool, error) {
		for _, m := range servers(t, ns) {
			if m.Annotations[controlplanev1.EtcdRestoreAnnotation] == "restore-2" {
				own = m
			}
		}
		return own != nil, nil
	}, func() string { return strings.Join(slices.Collect(maps.Keys(servers(t, ns))), ",") })
	config := &bootstrapv1.KThreesConfig{}
	must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: own.Spec.Bootstrap.ConfigRef.Name}, config))
	if e := config.Spec.ServerConfig.Etcd; e == nil || e.RestoreFrom != safety {
		t.Errorf("the new first server restores %+v, want %s", config.Spec.ServerConfig.Etcd, safety)
	}
	markReady(t, own)
	got := waitForPhase(t, second, controlplanev1.EtcdRestoreJoiningServers)
	// No safety snapshot taken with no server running; the failed restore's one is
	// carried, for a way out should this restore fail too.
	k3s.mu.Lock()
	saves := slices.Clone(k3s.saves)
	k3s.mu.Unlock()
	if len(saves) != 1 || got.Status.SafetySnapshot != safety {
		t.Errorf("safety snapshots taken %v, the new restore's status.safetySnapshot %q: want only the failed restore's %s, carried", saves, got.Status.SafetySnapshot, safety)
	}
	waitFor(t, "the failed restore gone once taken over", func(ctx context.Context) (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(first), &controlplanev1.KThreesEtcdRestore{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}, func() string { return "" })
}
