package bootstrap

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

const restoredSnapshot = "etcd-snapshot-server-0-1700000000"

// restoreSpec is a server spec as a restore's server and the control plane's other
// servers get it: snapshots to S3, and the snapshot to restore.
func restoreSpec() bootstrapv1.KThreesConfigSpec {
	return bootstrapv1.KThreesConfigSpec{ServerConfig: bootstrapv1.KThreesServerConfig{Etcd: &bootstrapv1.Etcd{
		Snapshots:   &bootstrapv1.EtcdSnapshots{S3: &bootstrapv1.EtcdSnapshotsS3{Bucket: "backups"}},
		RestoreFrom: restoredSnapshot,
	}}}
}

// markedServer is a server Machine and config carrying the restore's annotation, as
// the control plane marks the restore's server (or as copied from a machine template).
func markedServer(t *testing.T, cluster *clusterv1.Cluster, name, restore string) *bootstrapv1.KThreesConfig {
	t.Helper()
	config := newMachineWithConfig(t, cluster, name, true, restoreSpec())
	config.Annotations = map[string]string{controlplanev1.EtcdRestoreAnnotation: restore}
	if err := env.Client.Update(context.Background(), config); err != nil {
		t.Fatal(err)
	}
	return config
}

// newRestore creates a KThreesEtcdRestore of clusterName at phase with firstServer,
// as the restore controller leaves it.
func newRestore(t *testing.T, ns, name, clusterName string, phase controlplanev1.EtcdRestorePhase, firstServer string) *controlplanev1.KThreesEtcdRestore {
	t.Helper()
	ctx := context.Background()
	r := &controlplanev1.KThreesEtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       controlplanev1.KThreesEtcdRestoreSpec{ClusterName: clusterName, SnapshotName: restoredSnapshot},
	}
	if err := env.Client.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	r.Status.Phase, r.Status.FirstServer, r.Status.SnapshotName = phase, firstServer, restoredSnapshot
	if err := env.Client.Status().Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	return r
}

// renderedData is the config's bootstrap data after one pass, "" when none was made.
func renderedData(t *testing.T, config *bootstrapv1.KThreesConfig) string {
	t.Helper()
	if err := pass(env.Client, config); err != nil {
		t.Fatalf("Reconcile %s: %v", config.Name, err)
	}
	s := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(config), s); err != nil {
		return ""
	}
	return string(s.Data["value"])
}

// The server a KThreesEtcdRestore creates in a cluster initialized long ago restores
// the snapshot as a first server does (cluster-init, cluster-reset with the restore
// path) instead of joining the servers it replaces, which are gone. A server with the
// same spec but not made by a restore joins, and ignores restoreFrom, as before.
func TestRestoreServerOfARunningClusterRestores(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newInitializedCluster(t, ns)
	newRestore(t, ns, "restore-1", cluster.Name, controlplanev1.EtcdRestoreRestoringFirstServer, "server-r")
	restoring := markedServer(t, cluster, "server-r", "restore-1")
	joining := newMachineWithConfig(t, cluster, "server-j", true, restoreSpec())

	restoreData := renderedData(t, restoring)
	if !strings.Contains(restoreData, "--cluster-reset-restore-path='"+restoredSnapshot+"'") {
		t.Errorf("the restore's server does not restore the snapshot:\n%s", restoreData)
	}
	if cfg := k3sConfig(t, []byte(restoreData)); cfg["cluster-init"] != true || cfg["server"] != nil {
		t.Errorf("the restore's server config.yaml = %v, want cluster-init and no server URL", cfg)
	}
	joinData := renderedData(t, joining)
	if strings.Contains(joinData, "cluster-reset") {
		t.Errorf("a joining server restores:\n%s", joinData)
	}
	if cfg := k3sConfig(t, []byte(joinData)); cfg["server"] == nil {
		t.Errorf("a joining server's config.yaml has no server URL: %v", cfg)
	}
}

// The restore's annotation alone never makes a server reset the cluster: only the
// server that a restore in progress records as its first server does. Any other
// marked server (the annotation copied from a machine template, a restore that is
// gone, over, or of another cluster) gets no bootstrap data, neither a restore nor a
// join or an init, and says why on DataSecretAvailable.
func TestRestoreMarkWithoutARestoreInProgressRendersNothing(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newInitializedCluster(t, ns)
	newRestore(t, ns, "restoring", cluster.Name, controlplanev1.EtcdRestoreRestoringFirstServer, "first")
	newRestore(t, ns, "joining", cluster.Name, controlplanev1.EtcdRestoreJoiningServers, "server-done")
	newRestore(t, ns, "elsewhere", "other-cluster", controlplanev1.EtcdRestoreRestoringFirstServer, "server-other")
	newRestore(t, ns, "unrecorded", cluster.Name, controlplanev1.EtcdRestoreRestoringFirstServer, "")

	for _, tc := range []struct {
		machine, restore, want string
	}{
		{"server-gone", "no-such-restore", `KThreesEtcdRestore "no-such-restore" named by its controlplane.cluster.x-k8s.io/etcd-restore annotation does not exist`},
		{"server-copied", "restoring", `restores on Machine "first", not on this one ("server-copied")`},
		{"server-done", "joining", `is in phase JoiningServers, not RestoringFirstServer`},
		{"server-other", "elsewhere", `restores Cluster "other-cluster", not this server's Cluster "` + cluster.Name + `"`},
		{"server-early", "unrecorded", `has not recorded its first server yet`},
	} {
		t.Run(tc.machine, func(t *testing.T) {
			config := markedServer(t, cluster, tc.machine, tc.restore)
			if data := renderedData(t, config); data != "" {
				t.Fatalf("a server marked by %s got bootstrap data:\n%s", tc.restore, data)
			}
			c := conditions.Get(getConfig(t, config), bootstrapv1.DataSecretAvailableCondition)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != bootstrapv1.EtcdRestoreNotInProgressReason || !strings.Contains(c.Message, tc.want) {
				t.Errorf("DataSecretAvailable = %+v, want %s saying %q", c, bootstrapv1.EtcdRestoreNotInProgressReason, tc.want)
			}
		})
	}
}

// A restore's server created before the restore recorded it waits, and is rendered
// as soon as the restore's status names it: the watch on restores wakes it.
func TestRestoreServerIsWokenWhenTheRestoreRecordsIt(t *testing.T) {
	startManager(t)
	ns := env.NewNamespace(t)
	cluster := newInitializedCluster(t, ns)
	restore := newRestore(t, ns, "restore-1", cluster.Name, controlplanev1.EtcdRestoreRestoringFirstServer, "")
	config := markedServer(t, cluster, "server-r", "restore-1")
	waitForReason(t, config, bootstrapv1.EtcdRestoreNotInProgressReason)

	restore.Status.FirstServer = "server-r"
	if err := env.Client.Status().Update(context.Background(), restore); err != nil {
		t.Fatal(err)
	}
	data := string(waitForDataSecret(t, config).Data["value"])
	if !strings.Contains(data, "--cluster-reset-restore-path='"+restoredSnapshot+"'") {
		t.Errorf("the restore's server does not restore the snapshot:\n%s", data)
	}
}
