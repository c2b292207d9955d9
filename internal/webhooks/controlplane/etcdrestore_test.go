package controlplane

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

const restoreWebhook = "validation.kthreesetcdrestore.controlplane.cluster.x-k8s.io"

// restorableCluster creates a Cluster named name and its control plane, on embedded
// etcd with snapshots to S3 unless etcd says otherwise.
func restorableCluster(t *testing.T, ns, name string, serverConfig func(*bootstrapv1.KThreesServerConfig)) {
	t.Helper()
	ctx := context.Background()
	kcp := probeControlPlane()
	kcp.Namespace, kcp.GenerateName, kcp.Name = ns, "", name+"-cp"
	kcp.Spec.KThreesConfigSpec.ServerConfig.Etcd = &bootstrapv1.Etcd{Snapshots: &bootstrapv1.EtcdSnapshots{
		S3: &bootstrapv1.EtcdSnapshotsS3{Bucket: "backups"}}}
	if serverConfig != nil {
		serverConfig(&kcp.Spec.KThreesConfigSpec.ServerConfig)
	}
	if err := env.Client.Create(ctx, kcp); err != nil {
		t.Fatal(err)
	}
	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: clusterv1.ClusterSpec{ControlPlaneRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: controlplanev1.GroupVersion.Group, Kind: "KThreesControlPlane", Name: kcp.Name,
		}},
	}
	if err := env.Client.Create(ctx, cluster); err != nil {
		t.Fatal(err)
	}
}

func restoreOf(ns, name, cluster string) *controlplanev1.KThreesEtcdRestore {
	return &controlplanev1.KThreesEtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       controlplanev1.KThreesEtcdRestoreSpec{ClusterName: cluster, SnapshotName: "etcd-snapshot-c1-cp-a-1700000000"},
	}
}

// A restore that cannot work, or would run beside another one of its cluster, is
// refused when it is created, with the reason; a finished one no longer blocks the
// next; the spec never changes.
func TestEtcdRestoreAdmission(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	restorableCluster(t, ns, "c1", nil)
	restorableCluster(t, ns, "nos3", func(sc *bootstrapv1.KThreesServerConfig) { sc.Etcd = nil })
	restorableCluster(t, ns, "db", func(sc *bootstrapv1.KThreesServerConfig) {
		sc.Etcd = nil
		sc.Datastore = &bootstrapv1.Datastore{EndpointSecret: bootstrapv1.SecretKeyReference{Name: "db", Key: "endpoint"}}
	})

	refused := func(r *controlplanev1.KThreesEtcdRestore, want string) {
		t.Helper()
		err := env.Client.Create(ctx, r)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), restoreWebhook) {
			t.Errorf("restore %s: error %v, want it refused by %s with %q", r.Name, err, restoreWebhook, want)
		}
	}
	first := restoreOf(ns, "first", "c1")
	if err := env.Client.Create(ctx, first); err != nil {
		t.Fatalf("a restore of a restorable cluster: %v", err)
	}
	refused(restoreOf(ns, "second", "c1"), "KThreesEtcdRestore first of this cluster is in progress (phase Pending)")
	refused(restoreOf(ns, "no-s3", "nos3"), "a new server can only read a snapshot from S3")
	refused(restoreOf(ns, "datastore", "db"), "not embedded etcd")
	refused(restoreOf(ns, "nowhere", "absent"), `spec.clusterName: Not found: "absent"`)
	local := restoreOf(ns, "local", "c1")
	local.Spec.SnapshotName = "/var/lib/rancher/k3s/server/db/snapshots/etcd-snapshot-a-1"
	refused(local, "must be the name of a snapshot in the cluster's S3 folder")

	changed := first.DeepCopy()
	changed.Spec.SnapshotName = "etcd-snapshot-c1-cp-b-1700000001"
	if err := env.Client.Update(ctx, changed); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "immutable") {
		t.Errorf("changing the snapshot: %v, want it refused as immutable", err)
	}

	first.Status.Phase = controlplanev1.EtcdRestoreFailed
	if err := env.Client.Status().Update(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, restoreOf(ns, "again", "c1")); err != nil {
		t.Errorf("a restore after a failed one: %v", err)
	}
}

// The webhook's own rules, without an apiserver: exactly one snapshot source, and
// an unchanged spec on update.
func TestEtcdRestoreSpecRules(t *testing.T) {
	v := &KThreesEtcdRestore{}
	both := restoreOf("ns", "r", "c1")
	both.Spec.SnapshotRef = "snap-1"
	if _, err := v.ValidateCreate(context.Background(), both); err == nil || !strings.Contains(err.Error(), "exactly one of snapshotName and snapshotRef") {
		t.Errorf("both sources: %v", err)
	}
	old := restoreOf("ns", "r", "c1")
	relabelled := old.DeepCopy()
	relabelled.Labels = map[string]string{"a": "b"}
	if _, err := v.ValidateUpdate(context.Background(), old, relabelled); err != nil {
		t.Errorf("a metadata change refused: %v", err)
	}
}
