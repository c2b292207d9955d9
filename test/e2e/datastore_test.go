package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/envtest"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
	"github.com/capk3s/capk3s/test/stack"
)

// The PostgreSQL server the datastore scenarios share, started by the first of them;
// each scenario has a role and database of its own.
var (
	postgresOnce sync.Once
	postgres     *envtest.Postgres
	postgresErr  error
)

func startPostgres(t *testing.T) *envtest.Postgres {
	t.Helper()
	postgresOnce.Do(func() { postgres, postgresErr = envtest.StartPostgres("") })
	if postgresErr != nil {
		t.Fatalf("starting PostgreSQL: %v", postgresErr)
	}
	return postgres
}

// stopPostgres is for TestMain, after the tests.
func stopPostgres() error {
	if postgres == nil {
		return nil
	}
	return postgres.Stop()
}

// newDatastoreScenario builds a cluster of servers on a database of their own: a role
// with the given password owns it, and the endpoint Secret holds loginPassword, which
// is the role's unless the scenario wants a refusal.
func newDatastoreScenario(t *testing.T, servers int32, password, loginPassword string) *scenario {
	t.Helper()
	pg := startPostgres(t)
	ref := &bootstrapv1.SecretKeyReference{Name: "k3s-datastore", Key: "endpoint"}
	s := newScenarioWith(t, stack.ClusterOptions{Servers: servers, Datastore: ref})
	// Namespaces are unique, and so, with dashes made SQL-friendly, are the names.
	name := strings.ReplaceAll(s.ns, "-", "_")
	s.must("creating the database role", pg.CreateRole(s.ctx, name, password))
	s.must("creating the database", pg.CreateDatabase(s.ctx, name, name))
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: ref.Name},
		StringData: map[string]string{ref.Key: pg.DSN(name, loginPassword, name)},
	}
	s.must("creating the datastore Secret", env.Client.Create(s.ctx, sec))
	return s
}

// TestExternalDatastoreHA: two servers (an even count, fine without etcd quorum) on
// PostgreSQL through kine keep the workload cluster's data across scaling out and in
// and a rolling upgrade that replaces every server; no etcd member ever exists, and
// the token is never changed.
func TestExternalDatastoreHA(t *testing.T) {
	s := newDatastoreScenario(t, 2, "pg-pass-1", "pg-pass-1")
	s.create()
	s.waitServers(2, oldVersion)
	s.checkDatastoreCluster()

	kept := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "kept-in-postgres"},
		Data:       map[string]string{"written": "before the rollout"},
	}
	s.must("writing a ConfigMap into the workload cluster", s.workloadClient().Create(s.ctx, kept.DeepCopy()))

	s.patchKCP(func(kcp *controlplanev1.KThreesControlPlane) { kcp.Spec.Replicas = ptr.To[int32](3) })
	s.waitServers(3, oldVersion)
	s.patchKCP(func(kcp *controlplanev1.KThreesControlPlane) { kcp.Spec.Replicas = ptr.To[int32](2) })
	s.waitServers(2, oldVersion)
	before := s.serverNames()
	s.patchKCP(func(kcp *controlplanev1.KThreesControlPlane) { kcp.Spec.Version = newVersion })
	s.waitServers(2, newVersion)

	if still := s.serverNames().Intersection(before); still.Len() > 0 {
		t.Errorf("servers not replaced by the upgrade: %v", still.UnsortedList())
	}
	got := &corev1.ConfigMap{}
	s.must("reading the ConfigMap after the rollout", s.workloadClient().Get(s.ctx, client.ObjectKeyFromObject(kept), got))
	if got.Data["written"] != "before the rollout" {
		t.Errorf("the ConfigMap's data after the rollout is %v", got.Data)
	}
	s.checkDatastoreCluster()
	s.token.check(t)
}

// checkDatastoreCluster checks what sets a datastore cluster apart: no etcd member
// and no etcd role on any Node, the SimCluster reporting the datastore without its
// credentials, and the control plane's DatastoreAvailable condition.
func (s *scenario) checkDatastoreCluster() {
	s.t.Helper()
	if m := simulator.EtcdMembers(s.key); len(m) > 0 {
		s.t.Errorf("a datastore cluster has etcd members %v", m)
	}
	for name, n := range s.nodes() {
		if _, ok := n.Labels["node-role.kubernetes.io/etcd"]; ok {
			s.t.Errorf("Node %s has the etcd role on a datastore cluster", name)
		}
	}
	sc := &simv1.SimCluster{}
	s.must("reading the SimCluster", env.Client.Get(s.ctx, s.key, sc))
	if !strings.HasPrefix(sc.Status.Datastore, "postgres://127.0.0.1:") || strings.Contains(sc.Status.Datastore, "@") {
		s.t.Errorf("SimCluster status.datastore = %q, want the PostgreSQL URL without credentials", sc.Status.Datastore)
	}
	kcp := &controlplanev1.KThreesControlPlane{}
	s.must("reading KThreesControlPlane", env.Client.Get(s.ctx, client.ObjectKeyFromObject(s.objs.ControlPlane), kcp))
	if c := conditions.Get(kcp, controlplanev1.DatastoreAvailableCondition); c == nil || c.Status != metav1.ConditionTrue {
		s.t.Errorf("KThreesControlPlane DatastoreAvailable = %+v, want True", c)
	}
}

// TestExternalDatastoreWrongPassword: a datastore endpoint whose password PostgreSQL
// refuses keeps the first server from ever starting the cluster, and the reason it
// gives does not quote the password.
func TestExternalDatastoreWrongPassword(t *testing.T) {
	s := newDatastoreScenario(t, 1, "pg-right-pass", "pg-wrong-pass")
	s.create()
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), s.objs.Cluster) })

	var reason string
	err := envtest.Eventually(s.ctx, waitTimeout, func(ctx context.Context) (bool, error) {
		list := &simv1.SimMachineList{}
		if err := env.Client.List(ctx, list, client.InNamespace(s.ns)); err != nil {
			return false, err
		}
		for _, m := range list.Items {
			c := conditions.Get(&m, clusterv1.ReadyCondition)
			if c == nil {
				continue
			}
			if c.Status == metav1.ConditionTrue {
				return false, fmt.Errorf("SimMachine %s is Ready on a refused datastore", m.Name)
			}
			reason = c.Reason + ": " + c.Message
			if c.Reason == "DatastoreUnreachable" {
				if strings.Contains(c.Message, "pg-wrong-pass") {
					return false, fmt.Errorf("the Ready condition quotes the password: %s", c.Message)
				}
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		s.dump()
		t.Fatalf("waiting for the first server to be refused by the datastore: %v; last seen: %s", err, reason)
	}
	if _, err := simulator.WorkloadClient(s.key); err == nil {
		t.Error("the workload API serves although the datastore refused the server")
	}
}
