package e2e

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/test/stack"
)

// TestIgnition: servers and agents booted from Ignition data (the simulator reads the
// files and the bootstrap unit's script from it) form a cluster as cloud-config does.
func TestIgnition(t *testing.T) {
	s := newScenarioWith(t, stack.ClusterOptions{Servers: 1, Agents: 1, Format: bootstrapv1.Ignition})
	s.create()
	s.waitServers(1, oldVersion)
	s.waitAgents(1)

	configs := &bootstrapv1.KThreesConfigList{}
	s.must("listing KThreesConfigs", env.Client.List(s.ctx, configs, client.InNamespace(s.ns)))
	if len(configs.Items) != 2 {
		t.Fatalf("%d KThreesConfigs, want 2", len(configs.Items))
	}
	for _, c := range configs.Items {
		data := &corev1.Secret{}
		s.must("reading bootstrap data", env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: c.Status.DataSecretName}, data))
		if f := string(data.Data["format"]); f != string(bootstrapv1.Ignition) {
			t.Errorf("KThreesConfig %s: data format %q, want ignition", c.Name, f)
		}
	}
	if n := len(s.nodes()); n != 2 {
		t.Errorf("workload cluster has %d Nodes, want 2", n)
	}
	s.token.check(t)
}
