package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/envtest"
)

// While a KThreesEtcdRestore deletes the servers and restores its first one, the
// control plane creates no server, even with none left (one it made would join a
// cluster that is gone, or start an empty one beside the restore). Once the restore
// lets go, the control plane is woken by the restore and scales as usual.
func TestRestoreHoldsTheServers(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	restore := &controlplanev1.KThreesEtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restore-1"},
		Spec:       controlplanev1.KThreesEtcdRestoreSpec{ClusterName: "c1", SnapshotName: "etcd-snapshot-a-1700000000"},
	}
	if err := env.Client.Create(ctx, restore); err != nil {
		t.Fatal(err)
	}
	setRestorePhase(t, restore, controlplanev1.EtcdRestoreRestoringFirstServer)

	startManager(t)
	createInfraTemplate(t, ns)
	port, err := envtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cluster, kcp := createStepTestCluster(t, ns, clusterv1.APIEndpoint{Host: "127.0.0.1", Port: int32(port)})
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	if err := env.Client.Status().Update(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	before := kcp.DeepCopy()
	if err := controllerutil.SetOwnerReference(cluster, kcp, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Patch(ctx, kcp, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	// The control plane does report meanwhile, and says why it does not scale up.
	var scaling *metav1.Condition
	if err := envtest.Eventually(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		got := &controlplanev1.KThreesControlPlane{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(kcp), got); err != nil {
			return false, err
		}
		scaling = conditions.Get(got, controlplanev1.ScalingUpCondition)
		return got.Status.ObservedGeneration == got.Generation && scaling != nil &&
			strings.Contains(scaling.Message, "held by KThreesEtcdRestore restore-1"), nil
	}); err != nil {
		t.Fatalf("the held control plane never said so: %v; ScalingUp %+v", err, scaling)
	}
	time.Sleep(3 * time.Second)
	if servers := listServers(t, ns); len(servers) != 0 {
		t.Fatalf("the control plane created %v while a restore held its servers", keysOf(servers))
	}

	setRestorePhase(t, restore, controlplanev1.EtcdRestoreJoiningServers)
	if err := envtest.Eventually(ctx, 30*time.Second, func(context.Context) (bool, error) {
		return len(listServers(t, ns)) > 0, nil
	}); err != nil {
		t.Fatal("the control plane created no server after the restore let go")
	}
}

func setRestorePhase(t *testing.T, restore *controlplanev1.KThreesEtcdRestore, phase controlplanev1.EtcdRestorePhase) {
	t.Helper()
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(restore), restore); err != nil {
		t.Fatal(err)
	}
	restore.Status.Phase = phase
	if err := env.Client.Status().Update(context.Background(), restore); err != nil {
		t.Fatal(err)
	}
}
