package etcdrestore

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/token"
)

// clusterSecrets are the cluster's Secrets (CAs, token, kubeconfig) by name, with
// their resourceVersion and data.
func clusterSecrets(t *testing.T, ns string) map[string]corev1.Secret {
	t.Helper()
	list := &corev1.SecretList{}
	must(t, env.Client.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: "c1"}))
	out := map[string]corev1.Secret{}
	tok := corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: token.SecretName("c1")}, &tok); err == nil {
		list.Items = append(list.Items, tok)
	}
	for _, s := range list.Items {
		out[s.Name] = corev1.Secret{ObjectMeta: metav1.ObjectMeta{ResourceVersion: s.ResourceVersion}, Data: s.Data}
	}
	return out
}

// The whole restore on a running cluster: the old servers are deleted with nothing
// waiting on the dead workload API, a second restore is refused meanwhile, one new
// server restores the snapshot while the control plane holds off, and once that
// server is up the control plane is let go; every step shows in a condition, and the
// cluster's CA, token and kubeconfig Secrets are never written.
func TestRestoreReprovisionsTheServers(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	k3s := provenCluster(t, ns)
	runManager(t)
	waitFor(t, "the kubeconfig", func(ctx context.Context) (bool, error) {
		_, ok := clusterSecrets(t, ns)["c1-kubeconfig"]
		return ok, nil
	}, func() string { return strings.Join(slices.Collect(maps.Keys(clusterSecrets(t, ns))), ",") })
	secretsBefore := clusterSecrets(t, ns)
	if _, ok := secretsBefore[token.SecretName("c1")]; !ok {
		t.Fatalf("no token Secret among %v", slices.Collect(maps.Keys(secretsBefore)))
	}

	restore := newRestore(t, ns, "restore-1")
	waitFor(t, "the old servers deleted and released", func(context.Context) (bool, error) {
		for _, m := range servers(t, ns) {
			_, noDrain := m.Annotations[clusterv1.ExcludeNodeDrainingAnnotation]
			_, noVolumes := m.Annotations[clusterv1.ExcludeWaitForNodeVolumeDetachAnnotation]
			_, hook := m.Annotations[etcdHook]
			if m.DeletionTimestamp.IsZero() || !noDrain || !noVolumes || hook {
				return false, nil
			}
		}
		return true, nil
	}, func() string { return "" })
	got := waitForPhase(t, restore, controlplanev1.EtcdRestoreDeletingServers)
	if !conditions.IsTrue(got, controlplanev1.EtcdRestoreStartedCondition) || got.Status.StartTime == nil || got.Status.SnapshotName != snapName {
		t.Errorf("a started restore's status: %+v", got.Status)
	}
	// The safety snapshot was taken, once, while every server still ran, and is named.
	k3s.mu.Lock()
	saves, dirs, whileDeleting := slices.Clone(k3s.saves), slices.Clone(k3s.saveDirs), k3s.savedWhileDeleting
	k3s.mu.Unlock()
	if len(saves) != 1 || got.Status.SafetySnapshot != saves[0] || !strings.HasPrefix(saves[0], "pre-restore-") || whileDeleting {
		t.Errorf("safety snapshots %v (taken while deleting: %v), status.safetySnapshot %q", saves, whileDeleting, got.Status.SafetySnapshot)
	}
	// Its copy on the server goes to the control plane's snapshots.directory.
	if len(dirs) != 1 || dirs[0] != snapshotDir {
		t.Errorf("the safety snapshot's dir %q, want the control plane's snapshots.directory %q", dirs, snapshotDir)
	}
	// Owned by its Cluster and labelled with it: deleted and moved with the Cluster.
	if owners := got.OwnerReferences; len(owners) != 1 || owners[0].Kind != "Cluster" || owners[0].Name != "c1" ||
		got.Labels[clusterv1.ClusterNameLabel] != "c1" {
		t.Errorf("restore owners %+v, labels %v: want the Cluster c1", owners, got.Labels)
	}

	second := newRestore(t, ns, "restore-2")
	refused := waitForPhase(t, second, controlplanev1.EtcdRestoreRefused)
	if c := conditions.Get(refused, controlplanev1.EtcdRestoreReadyCondition); c == nil || c.Reason != controlplanev1.EtcdRestoreRefusedReason || !strings.Contains(c.Message, "KThreesEtcdRestore restore-1 holds this control plane") {
		t.Errorf("the second restore's Ready condition: %+v", c)
	}

	releaseDeleted(t, ns)
	// Cluster API still probes the old workload API successfully (as far as it
	// knows): its caches of it would never see the restored cluster, so the first
	// server waits until it has given that API up.
	waitFor(t, "the first server held for Cluster API's caches", func(ctx context.Context) (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(restore), got)
		return err == nil && strings.Contains(got.Status.Message, "held until Cluster API has dropped its caches"), err
	}, func() string { return got.Status.Message })
	time.Sleep(2 * time.Second)
	if all := servers(t, ns); len(all) != 0 {
		t.Fatalf("servers created while Cluster API still held the old workload API: %v", slices.Collect(maps.Keys(all)))
	}
	probeFailed(t, ns, time.Minute)
	var first *clusterv1.Machine
	waitFor(t, "the restore's first server", func(context.Context) (bool, error) {
		all := servers(t, ns)
		for _, m := range all {
			if m.Annotations[controlplanev1.EtcdRestoreAnnotation] == "restore-1" {
				first = m
			}
		}
		return first != nil && len(all) == 1, nil
	}, func() string { return strings.Join(slices.Collect(maps.Keys(servers(t, ns))), ",") })
	config := &bootstrapv1.KThreesConfig{}
	must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: first.Spec.Bootstrap.ConfigRef.Name}, config))
	if e := config.Spec.ServerConfig.Etcd; e == nil || e.RestoreFrom != snapName || e.Snapshots == nil || e.Snapshots.S3 == nil || e.Snapshots.S3.Folder != "c1" {
		t.Errorf("the first server's etcd config: %+v", config.Spec.ServerConfig.Etcd)
	}
	if config.Annotations[controlplanev1.EtcdRestoreAnnotation] != "restore-1" {
		t.Errorf("the first server's KThreesConfig is not marked: %v", config.Annotations)
	}
	waitFor(t, "the first server in the restore's status", func(ctx context.Context) (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(restore), got)
		return err == nil && got.Status.FirstServer == first.Name, err
	}, func() string { return got.Status.Message })
	if got.Status.Phase != controlplanev1.EtcdRestoreRestoringFirstServer || !conditions.IsTrue(got, controlplanev1.EtcdRestoreServersDeletedCondition) {
		t.Errorf("restoring the first server: %+v", got.Status)
	}
	// The control plane wants three servers and has one: held, it adds none.
	time.Sleep(2 * time.Second)
	if all := servers(t, ns); len(all) != 1 {
		t.Fatalf("servers while the first one restores: %v", slices.Collect(maps.Keys(all)))
	}

	markReady(t, first)
	got = waitForPhase(t, restore, controlplanev1.EtcdRestoreJoiningServers)
	if !conditions.IsTrue(got, controlplanev1.EtcdRestoreFirstServerRestoredCondition) ||
		conditions.IsTrue(got, controlplanev1.EtcdRestoreServersJoinedCondition) {
		t.Errorf("joining: %+v", got.Status.Conditions)
	}

	after := clusterSecrets(t, ns)
	for name, s := range secretsBefore {
		if a, ok := after[name]; !ok || a.ResourceVersion != s.ResourceVersion || !equality.Semantic.DeepEqual(a.Data, s.Data) {
			t.Errorf("Secret %s was written during the restore", name)
		}
	}
}

// A manager killed at any point of a restore resumes from what it finds: servers
// deleted while it was down are not waited for again, a first server held for Cluster
// API's caches stays held, and the first server is created once, however often the
// manager restarts.
func TestRestoreResumesAfterTheManagerStops(t *testing.T) {
	ns := env.NewNamespace(t)
	provenCluster(t, ns)
	stop := runManager(t)
	restore := newRestore(t, ns, "restore-1")
	waitForPhase(t, restore, controlplanev1.EtcdRestoreDeletingServers)
	waitForOldServersDeleted(t, ns)
	stop()

	releaseDeleted(t, ns)
	// Stopped again while the first server is held for Cluster API's caches: the
	// next manager holds it too, until the probe has failed long enough.
	stop = runManager(t)
	held := &controlplanev1.KThreesEtcdRestore{}
	waitFor(t, "the first server held", func(ctx context.Context) (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(restore), held)
		return err == nil && strings.Contains(held.Status.Message, "held until Cluster API has dropped its caches"), err
	}, func() string { return held.Status.Message })
	stop()
	if all := servers(t, ns); len(all) != 0 {
		t.Fatalf("servers created while held: %v", slices.Collect(maps.Keys(all)))
	}
	probeFailed(t, ns, time.Minute)
	stop = runManager(t)
	waitFor(t, "the first server", func(context.Context) (bool, error) {
		return len(servers(t, ns)) == 1, nil
	}, func() string { return strings.Join(slices.Collect(maps.Keys(servers(t, ns))), ",") })
	stop()

	runManager(t)
	waitForPhase(t, restore, controlplanev1.EtcdRestoreRestoringFirstServer)
	time.Sleep(2 * time.Second)
	all := servers(t, ns)
	if len(all) != 1 {
		t.Fatalf("servers after a restart: %v, want the one first server", slices.Collect(maps.Keys(all)))
	}
	for _, m := range all {
		markReady(t, m)
	}
	waitForPhase(t, restore, controlplanev1.EtcdRestoreJoiningServers)
}

// probeFailed records on the Cluster what Cluster API's Cluster controller writes once
// its health probes of the workload API have failed for its grace period: the
// RemoteConnectionProbe condition False, here since ago.
func probeFailed(t *testing.T, ns string, ago time.Duration) {
	t.Helper()
	cluster := &clusterv1.Cluster{}
	must(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "c1"}, cluster))
	before := cluster.DeepCopy()
	meta.SetStatusCondition(&cluster.Status.Conditions, metav1.Condition{
		Type: clusterv1.ClusterRemoteConnectionProbeCondition, Status: metav1.ConditionFalse,
		Reason: clusterv1.ClusterRemoteConnectionProbeFailedReason, LastTransitionTime: metav1.NewTime(time.Now().Add(-ago)),
	})
	must(t, env.Client.Status().Patch(context.Background(), cluster, client.MergeFrom(before)))
}

// While the first server is held for Cluster API's caches, the restore looks again
// every few seconds; as long as nothing it reads changes, its status is not written
// again (each write would wake another pass).
func TestHeldRestoreIsNotRewrittenByPolls(t *testing.T) {
	ns := env.NewNamespace(t)
	provenCluster(t, ns)
	runManager(t)
	restore := newRestore(t, ns, "restore-1")
	waitForPhase(t, restore, controlplanev1.EtcdRestoreDeletingServers)
	waitForOldServersDeleted(t, ns)
	// The probe went False just now: the hold lasts the whole margin.
	probeFailed(t, ns, 0)
	releaseDeleted(t, ns)
	held := &controlplanev1.KThreesEtcdRestore{}
	waitFor(t, "the first server held", func(ctx context.Context) (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(restore), held)
		return err == nil && strings.Contains(held.Status.Message, "held until Cluster API has dropped its caches"), err
	}, func() string { return held.Status.Message })
	time.Sleep(2*oldAPIPoll + time.Second)
	again := &controlplanev1.KThreesEtcdRestore{}
	must(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(restore), again))
	if again.ResourceVersion != held.ResourceVersion {
		t.Errorf("the held restore was written again: %q, then %q", held.Status.Message, again.Status.Message)
	}
	if all := servers(t, ns); len(all) != 0 {
		t.Errorf("servers created while held: %v", slices.Collect(maps.Keys(all)))
	}
}

// waitForOldServersDeleted waits until every server Machine of the namespace is being
// deleted.
func waitForOldServersDeleted(t *testing.T, ns string) {
	t.Helper()
	waitFor(t, "the old servers deleted", func(context.Context) (bool, error) {
		for _, m := range servers(t, ns) {
			if m.DeletionTimestamp.IsZero() {
				return false, nil
			}
		}
		return true, nil
	}, func() string { return "" })
}
