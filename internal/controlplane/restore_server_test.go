package controlplane

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

func s3ControlPlane() (*controlplanev1.KThreesControlPlane, *clusterv1.Cluster) {
	kcp := &controlplanev1.KThreesControlPlane{ObjectMeta: metav1.ObjectMeta{Name: "cp", Namespace: "ns", UID: "u"}}
	kcp.Spec.Version = "v1.36.3+k3s1"
	kcp.Spec.KThreesConfigSpec.ServerConfig.Etcd = &bootstrapv1.Etcd{Snapshots: &bootstrapv1.EtcdSnapshots{
		S3: &bootstrapv1.EtcdSnapshotsS3{Bucket: "backups"}}}
	return kcp, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
}

// The server a restore creates is every server's shape plus the snapshot and the
// restore's mark, on both its config and its Machine (which keeps the etcd hook: it
// is an ordinary server once it has restored).
func TestDesiredRestoreServer(t *testing.T) {
	kcp, cluster := s3ControlPlane()
	config := desiredRestoreKThreesConfig(kcp, cluster, "cp-x", "restore-1", "etcd-snapshot-cp-a-1700000000")
	if e := config.Spec.ServerConfig.Etcd; e.RestoreFrom != "etcd-snapshot-cp-a-1700000000" || e.Snapshots == nil || e.Snapshots.S3.Bucket != "backups" {
		t.Errorf("etcd = %+v, want the snapshot and the control plane's S3", e)
	}
	if config.Annotations[controlplanev1.EtcdRestoreAnnotation] != "restore-1" {
		t.Errorf("config annotations = %v", config.Annotations)
	}
	if kcp.Spec.KThreesConfigSpec.ServerConfig.Etcd.RestoreFrom != "" {
		t.Error("the control plane's own spec was changed")
	}
	m := desiredRestoreMachine(kcp, cluster, "cp-x", "", "restore-1", clusterv1.ContractVersionedObjectReference{}, clusterv1.ContractVersionedObjectReference{})
	if m.Annotations[controlplanev1.EtcdRestoreAnnotation] != "restore-1" || !hasEtcdHook(m) {
		t.Errorf("Machine annotations = %v, want the restore's mark and the etcd hook", m.Annotations)
	}
}

// A restored server stays once the restore is over: its snapshot (and a snapshot the
// control plane names for a new cluster's first server) is no reason for a rollout;
// any other change of the etcd settings still is.
func TestRestoreServerIsUpToDate(t *testing.T) {
	kcp, cluster := s3ControlPlane()
	now := time.Now()
	m := desiredRestoreMachine(kcp, cluster, "cp-x", "", "restore-1", clusterv1.ContractVersionedObjectReference{}, clusterv1.ContractVersionedObjectReference{})
	m.Spec.Version = kcp.Spec.Version
	objs := serverObjects{config: desiredRestoreKThreesConfig(kcp, cluster, "cp-x", "restore-1", "etcd-snapshot-cp-a-1700000000")}
	if reason := upToDateReason(m, objs, kcp, now); reason != "" {
		t.Errorf("the restored server is outdated: %s", reason)
	}
	named := kcp.DeepCopy()
	named.Spec.KThreesConfigSpec.ServerConfig.Etcd.RestoreFrom = "etcd-snapshot-cp-a-1600000000"
	if reason := upToDateReason(m, objs, named, now); reason != "" {
		t.Errorf("a restoreFrom on the control plane makes the server outdated: %s", reason)
	}
	onlyRestore := kcp.DeepCopy()
	onlyRestore.Spec.KThreesConfigSpec.ServerConfig.Etcd = &bootstrapv1.Etcd{RestoreFrom: "/snap"}
	plain := serverObjects{config: desiredKThreesConfig(onlyRestore, cluster, "cp-y")}
	plain.config.Spec.ServerConfig.Etcd = nil
	if reason := upToDateReason(m, plain, onlyRestore, now); reason != "" {
		t.Errorf("etcd with only restoreFrom against none: %s", reason)
	}
	changed := kcp.DeepCopy()
	changed.Spec.KThreesConfigSpec.ServerConfig.Etcd.Snapshots.S3.Bucket = "elsewhere"
	if reason := upToDateReason(m, objs, changed, now); reason == "" {
		t.Error("a changed S3 bucket does not roll the restored server out")
	}
}

// An old server a restore deletes waits for nothing in the workload cluster: no
// drain, no volume detach, no etcd member removal; a second call changes nothing.
func TestReleaseServerForRestore(t *testing.T) {
	m := &clusterv1.Machine{}
	ensureEtcdHook(m)
	if !ReleaseServerForRestore(m) {
		t.Fatal("nothing changed")
	}
	for _, k := range []string{clusterv1.ExcludeNodeDrainingAnnotation, clusterv1.ExcludeWaitForNodeVolumeDetachAnnotation} {
		if _, ok := m.Annotations[k]; !ok {
			t.Errorf("no %s", k)
		}
	}
	if hasEtcdHook(m) {
		t.Error("the etcd hook is still there")
	}
	if ReleaseServerForRestore(m) {
		t.Error("a second release changed the Machine")
	}
}
