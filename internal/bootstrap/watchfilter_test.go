package bootstrap

import (
	"context"
	"testing"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/test/envtest"
)

// A shard's server waits for the token and is woken by it, though the token Secret,
// like every Secret capk3s makes, carries no watch-filter label; another shard's
// config is left alone.
func TestShardServerIsWokenByAnUnlabelledToken(t *testing.T) {
	const shard = "shard-a"
	env.StartManager(t, envtest.ManagerOptions{}, func(ctx context.Context, mgr ctrl.Manager) error {
		r := &Reconciler{Client: mgr.GetClient(), WatchFilterValue: shard}
		return r.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 4})
	})
	// The same cluster in shard b, whose token comes first: its Secret events reach
	// shard a's controller too, and must not make it act on b's config.
	other, otherConfig := shardServer(t, "shard-b")
	createToken(t, other)
	cluster, config := shardServer(t, shard)

	waitForReason(t, config, bootstrapv1.WaitingForTokenReason)
	createToken(t, cluster)
	waitForDataSecret(t, config)
	if got := getConfig(t, otherConfig); len(got.Status.Conditions) > 0 || got.Status.DataSecretName != "" {
		t.Errorf("shard-a's manager reconciled shard-b's config: status %+v", got.Status)
	}
}

// shardServer is a ready cluster in a namespace of its own and its first server's
// config, labelled for shard as a user labels a Cluster and as the control plane
// labels its servers.
func shardServer(t *testing.T, shard string) (*clusterv1.Cluster, *bootstrapv1.KThreesConfig) {
	t.Helper()
	cluster := newReadyCluster(t, env.NewNamespace(t))
	config := newMachineWithConfig(t, cluster, "server-0", true, bootstrapv1.KThreesConfigSpec{})
	for _, o := range []client.Object{cluster, config} {
		patch := client.MergeFrom(o.DeepCopyObject().(client.Object))
		o.SetLabels(map[string]string{clusterv1.ClusterNameLabel: cluster.Name, clusterv1.WatchLabel: shard})
		if err := env.Client.Patch(context.Background(), o, patch); err != nil {
			t.Fatal(err)
		}
	}
	return cluster, config
}
