package bootstrap

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// The server a KThreesEtcdRestore creates in a cluster initialized long ago restores
// the snapshot as a first server does (cluster-init, cluster-reset with the restore
// path) instead of joining the servers it replaces, which are gone. A server with the
// same spec but not made by a restore joins, and ignores restoreFrom, as before.
func TestRestoreServerOfARunningClusterRestores(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newInitializedCluster(t, ns)
	spec := bootstrapv1.KThreesConfigSpec{ServerConfig: bootstrapv1.KThreesServerConfig{Etcd: &bootstrapv1.Etcd{
		Snapshots:   &bootstrapv1.EtcdSnapshots{S3: &bootstrapv1.EtcdSnapshotsS3{Bucket: "backups"}},
		RestoreFrom: "etcd-snapshot-server-0-1700000000",
	}}}
	restoring := newMachineWithConfig(t, cluster, "server-r", true, spec)
	restoring.Annotations = map[string]string{controlplanev1.EtcdRestoreAnnotation: "restore-1"}
	if err := env.Client.Update(context.Background(), restoring); err != nil {
		t.Fatal(err)
	}
	joining := newMachineWithConfig(t, cluster, "server-j", true, spec)

	data := func(config *bootstrapv1.KThreesConfig) string {
		t.Helper()
		if err := pass(env.Client, config); err != nil {
			t.Fatalf("Reconcile %s: %v", config.Name, err)
		}
		s := &corev1.Secret{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(config), s); err != nil {
			t.Fatalf("%s: no bootstrap data: %v", config.Name, err)
		}
		return string(s.Data["value"])
	}
	restoreData := data(restoring)
	if !strings.Contains(restoreData, "--cluster-reset-restore-path='etcd-snapshot-server-0-1700000000'") {
		t.Errorf("the restore's server does not restore the snapshot:\n%s", restoreData)
	}
	if cfg := k3sConfig(t, []byte(restoreData)); cfg["cluster-init"] != true || cfg["server"] != nil {
		t.Errorf("the restore's server config.yaml = %v, want cluster-init and no server URL", cfg)
	}
	joinData := data(joining)
	if strings.Contains(joinData, "cluster-reset") {
		t.Errorf("a joining server restores:\n%s", joinData)
	}
	if cfg := k3sConfig(t, []byte(joinData)); cfg["server"] == nil {
		t.Errorf("a joining server's config.yaml has no server URL: %v", cfg)
	}
}
