package etcdrestore

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/controlplane/restoreplan"
	"github.com/capk3s/capk3s/internal/k3s"
)

// workloadIsEnv is a ClusterCache whose workload cluster is the test's apiserver.
type workloadIsEnv struct{ clustercache.ClusterCache }

func (workloadIsEnv) GetClient(context.Context, client.ObjectKey) (client.Client, error) {
	return env.Client, nil
}

func (workloadIsEnv) GetReader(context.Context, client.ObjectKey) (client.Reader, error) {
	return env.Client, nil
}

// The workload cluster's Nodes are servers' by either of k3s's server roles
// (control-plane, etcd on an etcd-only server), an agent's by neither; a Node is
// deleted only while it is the one that was listed: one re-created under the same
// name is left alone.
func TestOldServerNodesDeletedByUID(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	node := func(name string, labels map[string]string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name, Labels: labels}}
		must(t, env.Client.Create(ctx, n))
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
		return n
	}
	cp := node("cp", map[string]string{k3s.ControlPlaneRoleLabel: "true", k3s.EtcdRoleLabel: "true"})
	etcdOnly := node("etcd", map[string]string{k3s.EtcdRoleLabel: "true"})
	agent := node("agent", nil)
	r := &Reconciler{Client: env.Client, ClusterCache: workloadIsEnv{}}
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"}}

	listed, problem := r.workloadNodes(ctx, cluster)
	if problem != "" {
		t.Fatal(problem)
	}
	byName := map[string]restoreplan.WorkloadNode{}
	for _, n := range listed {
		byName[n.Name] = n
	}
	for _, want := range []struct {
		n      *corev1.Node
		server bool
	}{{cp, true}, {etcdOnly, true}, {agent, false}} {
		if got := byName[want.n.Name]; got.Server != want.server || got.UID != string(want.n.UID) {
			t.Errorf("Node %s read as %+v, want server %v, UID %s", want.n.Name, got, want.server, want.n.UID)
		}
	}

	// cp was re-created since it was listed: its listed UID is not its UID now.
	stale := byName[cp.Name]
	stale.UID = "0f0f0f0f-0000-0000-0000-000000000000"
	must(t, r.deleteNodes(ctx, cluster, []restoreplan.WorkloadNode{stale, byName[etcdOnly.Name]}))
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cp), &corev1.Node{}); err != nil {
		t.Errorf("the Node re-created under the listed name: %v, want it kept", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(etcdOnly), &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("the listed Node: %v, want it deleted", err)
	}
}
