package lifecycle

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cluster-api/util/conditions"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/workload"
	"github.com/capk3s/capk3s/test/envtest"
)

// TestEtcdSnapshotStatusFollowsTheWorkloadCluster: with snapshots configured, a
// settled control plane reports "no snapshot yet" while the workload cluster does
// not even have k3s's ETCDSnapshotFile kind; once k3s records snapshots, the
// control plane names the newest, woken by its watch on the records alone (nothing
// else changes in the cluster meanwhile), and a failed one turns the condition
// False with k3s's error.
func TestEtcdSnapshotStatusFollowsTheWorkloadCluster(t *testing.T) {
	s := newScenario(t)
	s.createControlPlane(1, func(kcp *controlplanev1.KThreesControlPlane) {
		kcp.Spec.KThreesConfigSpec.ServerConfig.Etcd = &bootstrapv1.Etcd{Snapshots: &bootstrapv1.EtcdSnapshots{Schedule: "0 */6 * * *"}}
	})
	s.waitForReplicas(1)
	s.waitForSnapshotCondition(metav1.ConditionFalse, controlplanev1.EtcdNoSnapshotYetReason, "")

	ctx := context.Background()
	s.must("installing the ETCDSnapshotFile kind", envtest.InstallETCDSnapshotFileCRD(ctx, s.workloadConfig))
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	s.recordSnapshot("etcd-snapshot-server-0-1", base, true, "")
	s.waitForSnapshotCondition(metav1.ConditionTrue, controlplanev1.EtcdSnapshotAvailableReason, "etcd-snapshot-server-0-1")

	s.recordSnapshot("etcd-snapshot-server-0-2", base.Add(time.Minute), false, "upload failed: NoSuchBucket")
	s.waitForSnapshotCondition(metav1.ConditionFalse, controlplanev1.EtcdSnapshotFailedReason, "etcd-snapshot-server-0-2")
	// k3s writes a record's spec before its status: a pass between the two already
	// reports the snapshot (not ready), so the status details are waited for too.
	wantMessage := "The newest snapshot etcd-snapshot-server-0-2 of node server-0 failed: upload failed: NoSuchBucket"
	var kcp *controlplanev1.KThreesControlPlane
	err := envtest.Eventually(ctx, time.Minute, func(context.Context) (bool, error) {
		kcp = s.getKCP()
		c := conditions.Get(kcp, controlplanev1.EtcdSnapshotsAvailableCondition)
		last := kcp.Status.LastEtcdSnapshot
		return c != nil && c.Message == wantMessage && last != nil && last.NodeName == "server-0" &&
			last.Location == "file:///var/lib/rancher/k3s/server/db/snapshots/etcd-snapshot-server-0-2" &&
			last.Size != nil && last.Size.String() == "2Mi" && last.CreationTime.Time.Equal(base.Add(time.Minute)) && !last.ReadyToUse, nil
	})
	if err != nil {
		t.Errorf("the failed snapshot's details never showed: condition %+v, lastEtcdSnapshot %+v",
			conditions.Get(kcp, controlplanev1.EtcdSnapshotsAvailableCondition), kcp.Status.LastEtcdSnapshot)
	}
	s.checkIdleReconcileWritesNothing()
}

// recordSnapshot writes an ETCDSnapshotFile as k3s does: the spec, then the status.
func (s *scenario) recordSnapshot(name string, created time.Time, ready bool, errMsg string) {
	s.t.Helper()
	ctx := context.Background()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(workload.ETCDSnapshotFileKind)
	u.SetName("local-" + name)
	u.Object["spec"] = map[string]any{"snapshotName": name, "nodeName": "server-0", "location": "file:///var/lib/rancher/k3s/server/db/snapshots/" + name}
	s.must("recording snapshot "+name, s.workload.Create(ctx, u))
	status := map[string]any{"creationTime": created.UTC().Format(time.RFC3339), "readyToUse": ready, "size": "2Mi"}
	if errMsg != "" {
		status["error"] = map[string]any{"message": errMsg}
	}
	u.Object["status"] = status
	s.must("recording snapshot status "+name, s.workload.Status().Update(ctx, u))
}

func (s *scenario) waitForSnapshotCondition(status metav1.ConditionStatus, reason, snapshot string) {
	s.t.Helper()
	var kcp *controlplanev1.KThreesControlPlane
	err := envtest.Eventually(context.Background(), time.Minute, func(context.Context) (bool, error) {
		kcp = s.getKCP()
		c := conditions.Get(kcp, controlplanev1.EtcdSnapshotsAvailableCondition)
		name := ""
		if kcp.Status.LastEtcdSnapshot != nil {
			name = kcp.Status.LastEtcdSnapshot.Name
		}
		return c != nil && c.Status == status && c.Reason == reason && name == snapshot, nil
	})
	if err != nil {
		s.t.Fatalf("waiting for EtcdSnapshotsAvailable %s/%s naming %q: %v; %s", status, reason, snapshot, err,
			fmt.Sprintf("condition %+v, lastEtcdSnapshot %+v", conditions.Get(kcp, controlplanev1.EtcdSnapshotsAvailableCondition), kcp.Status.LastEtcdSnapshot))
	}
}
