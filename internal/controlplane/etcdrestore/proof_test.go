package etcdrestore

import (
	"context"
	"strings"
	"testing"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// A restore whose snapshot k3s's list does not show as this cluster's, in the
// control plane's bucket and folder, readable with its credentials, is Refused with
// a message naming what was checked, and nothing is deleted: every server Machine
// is there, none being deleted, no snapshot was taken, the lock was never taken.
func TestRestoreRefusedWithNothingDeleted(t *testing.T) {
	type setup struct {
		name  string
		seed  func(f *fakeSupervisor)
		snap  string
		wants []string
	}
	cases := []setup{
		{name: "a snapshot that does not exist", snap: "etcd-snapshot-c1-cp-a-1700000001",
			wants: []string{`snapshot "etcd-snapshot-c1-cp-a-1700000001" in bucket "backups", folder "c1"`, "Cluster c1",
				"no object at s3://backups/c1/etcd-snapshot-c1-cp-a-1700000001"}},
		{name: "another folder of the same bucket", snap: snapName,
			seed:  func(f *fakeSupervisor) { f.put("c2/"+snapName, k3sTokenHash(f.password)) },
			wants: []string{"no object at s3://backups/c1/" + snapName}},
		{name: "another cluster's snapshot in this folder", snap: snapName,
			seed:  func(f *fakeSupervisor) { f.put("c1/"+snapName, k3sTokenHash("another cluster's token")) },
			wants: []string{"taken by a cluster with another join token"}},
		{name: "an endpoint on a server's own address", snap: snapName,
			seed: func(f *fakeSupervisor) {
				f.put("c1/"+snapName, k3sTokenHash(f.password))
				m := servers(f.t, f.ns)["c1-cp-b"]
				m.Status.Addresses = clusterv1.MachineAddresses{{Type: clusterv1.MachineInternalIP, Address: "127.0.0.1"}}
				must(f.t, env.Client.Status().Update(context.Background(), m))
			},
			wants: []string{"controlPlaneEndpoint is the own address of server c1-cp-b"}},
		{name: "credentials that cannot read the bucket", snap: snapName,
			seed: func(f *fakeSupervisor) {
				f.put("c1/"+snapName, k3sTokenHash(f.password))
				f.denied = true
			},
			wants: []string{"could not list the bucket with these settings and credentials", "400", "Access Denied"}},
	}
	type running struct {
		ns      string
		k3s     *fakeSupervisor
		restore *controlplanev1.KThreesEtcdRestore
	}
	var all []running
	for _, tc := range cases {
		ns := env.NewNamespace(t)
		runningCluster(t, ns)
		f := startSupervisor(t, ns)
		if tc.seed != nil {
			tc.seed(f)
		}
		all = append(all, running{ns: ns, k3s: f})
	}
	runManager(t)
	for i, tc := range cases {
		all[i].restore = newRestoreOf(t, all[i].ns, "restore-1", tc.snap)
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := waitForPhase(t, all[i].restore, controlplanev1.EtcdRestoreRefused)
			for _, w := range append(tc.wants, "refused, nothing was changed") {
				if !strings.Contains(got.Status.Message, w) {
					t.Errorf("message %q, want %q", got.Status.Message, w)
				}
			}
			assertNothingDeleted(t, all[i].ns, all[i].k3s)
		})
	}
}

// assertNothingDeleted checks that the three servers are there and not deleted, no
// snapshot was taken, and the control plane's lock is not held.
func assertNothingDeleted(t *testing.T, ns string, f *fakeSupervisor) {
	t.Helper()
	time.Sleep(time.Second)
	ms := servers(t, ns)
	if len(ms) != 3 {
		t.Errorf("servers %d, want the 3 old ones", len(ms))
	}
	for _, m := range ms {
		if !m.DeletionTimestamp.IsZero() {
			t.Errorf("server %s is being deleted", m.Name)
		}
	}
	f.mu.Lock()
	saves := f.saves
	f.mu.Unlock()
	if len(saves) != 0 {
		t.Errorf("snapshots taken: %v", saves)
	}
	kcp := &controlplanev1.KThreesControlPlane{}
	must(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "c1-cp"}, kcp))
	if l := kcp.Annotations[controlplanev1.EtcdRestoreLockAnnotation]; l != "" {
		t.Errorf("the control plane's restore lock %q", l)
	}
}

// A safety snapshot k3s cannot take refuses the restore before anything is deleted.
func TestRestoreRefusedWhenTheSafetySnapshotFails(t *testing.T) {
	ns := env.NewNamespace(t)
	f := provenCluster(t, ns)
	f.saveFails = true
	runManager(t)
	got := waitForPhase(t, newRestore(t, ns, "restore-1"), controlplanev1.EtcdRestoreRefused)
	if !strings.Contains(got.Status.Message, "safety snapshot pre-restore-") || !strings.Contains(got.Status.Message, "500") ||
		got.Status.SafetySnapshot != "" {
		t.Errorf("status %q, safety snapshot %q", got.Status.Message, got.Status.SafetySnapshot)
	}
	time.Sleep(time.Second)
	for _, m := range servers(t, ns) {
		if !m.DeletionTimestamp.IsZero() {
			t.Errorf("server %s is being deleted", m.Name)
		}
	}
	if n := len(servers(t, ns)); n != 3 {
		t.Errorf("servers %d, want 3", n)
	}
}

// Two restores of one cluster, both past the webhook: exactly one takes the
// control plane's lock and deletes servers; the other is Refused naming it.
func TestTwoRestoresOneProceeds(t *testing.T) {
	ns := env.NewNamespace(t)
	provenCluster(t, ns)
	a, b := newRestore(t, ns, "restore-a"), newRestore(t, ns, "restore-b")
	runManager(t)
	var winner, loser *controlplanev1.KThreesEtcdRestore
	waitFor(t, "one restore refused", func(ctx context.Context) (bool, error) {
		for _, pair := range [][2]*controlplanev1.KThreesEtcdRestore{{a, b}, {b, a}} {
			got := &controlplanev1.KThreesEtcdRestore{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pair[1]), got); err != nil {
				return false, err
			}
			if got.Status.Phase == controlplanev1.EtcdRestoreRefused {
				winner, loser = pair[0], got
				return true, nil
			}
		}
		return false, nil
	}, func() string { return "" })
	if !strings.Contains(loser.Status.Message, "KThreesEtcdRestore "+winner.Name+" holds this control plane") {
		t.Errorf("the refused restore's message %q, want it to name %s", loser.Status.Message, winner.Name)
	}
	waitForPhase(t, winner, controlplanev1.EtcdRestoreDeletingServers)
	got := &controlplanev1.KThreesEtcdRestore{}
	must(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(loser), got))
	if got.Status.Phase != controlplanev1.EtcdRestoreRefused || got.Status.StartTime != nil {
		t.Errorf("the loser: %s, started %v", got.Status.Phase, got.Status.StartTime)
	}
}
