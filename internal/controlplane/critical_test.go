package controlplane

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"

	"github.com/capk3s/capk3s/test/cpfixtures"
)

func deleting(servers map[string]*clusterv1.Machine) []string {
	var out []string
	for name, m := range servers {
		if !m.DeletionTimestamp.IsZero() {
			out = append(out, name)
		}
	}
	return out
}

// TestStoredCriticalChangeHoldsTheServers: a control plane stored with a change of a
// setting k3s servers must share (before the webhook refused it, or past it) neither
// replaces nor adds nor removes servers: k3s would refuse each new one, and with
// maxSurge 0 the rollout would remove the old ones first. It says why on RollingOut.
// Set back, a change k3s does not compare rolls out as usual.
func TestStoredCriticalChangeHoldsTheServers(t *testing.T) {
	f := newInPlaceFixture(t, 3, 0, nil)
	f.kcp.Spec.KThreesConfigSpec.ServerConfig.ExtraConfig = map[string]apiextensionsv1.JSON{"flannel-backend": {Raw: []byte(`"host-gw"`)}}
	for range 3 {
		f.pass(t)
	}
	servers := f.servers(t)
	if len(servers) != 3 || len(deleting(servers)) != 0 {
		t.Fatalf("%d servers, deleting %v: a rollout k3s would refuse went ahead", len(servers), deleting(servers))
	}
	requireRollingOut(t, f.kcp, controlplanev1.CriticalSettingChangedReason, "flannel-backend (vxlan, now host-gw)")

	f.kcp.Spec.Replicas = ptr.To[int32](5)
	f.pass(t)
	if n := len(f.servers(t)); n != 3 {
		t.Errorf("%d servers: a scale-up k3s would refuse went ahead", n)
	}

	f.kcp.Spec.Replicas = ptr.To[int32](3)
	f.kcp.Spec.KThreesConfigSpec.ServerConfig.ExtraConfig = nil
	f.kcp.Spec.KThreesConfigSpec.ServerConfig.DisableComponents = []string{"traefik"}
	for range 3 {
		f.pass(t)
	}
	// Without Machine finalizers here, a removed server is gone at once.
	replaced := 0
	for name := range servers {
		if m, ok := f.servers(t)[name]; !ok || !m.DeletionTimestamp.IsZero() {
			replaced++
		}
	}
	if replaced == 0 {
		t.Errorf("no server replaced after a change k3s does not compare; RollingOut %+v", f.kcp.Status.Conditions)
	}
}

// TestCriticalChangeCountsRunningServersOnly: only servers whose Node registered
// count as the cluster's, and a datastore control plane is never held.
func TestCriticalChangeCountsRunningServersOnly(t *testing.T) {
	kcp := cpfixtures.DecisionKCP(3, nil)
	kcp.Spec.KThreesConfigSpec.ServerConfig.ExtraConfig = map[string]apiextensionsv1.JSON{"secrets-encryption": {Raw: []byte(`true`)}}
	running := &bootstrapv1.KThreesConfig{}
	refused := &bootstrapv1.KThreesConfig{Spec: *kcp.Spec.KThreesConfigSpec.DeepCopy()}
	seen := observed{
		machines: collections.FromMachines(cpfixtures.DecisionMachine("a", 0), cpfixtures.DecisionMachine("b", 0)),
		objects:  map[string]serverObjects{"a": {config: running}, "b": {config: refused}},
		nodes:    cpfixtures.ReadyNodes("a"),
	}
	if got := criticalChange(kcp, seen); got == "" {
		t.Error("a change against the running server a is not held")
	}
	seen.nodes = cpfixtures.ReadyNodes("b")
	if got := criticalChange(kcp, seen); got != "" {
		t.Errorf("held against a server that never ran: %s", got)
	}
	seen.nodes = cpfixtures.ReadyNodes("a")
	cpfixtures.OnDatastore(kcp)
	if got := criticalChange(kcp, seen); got != "" {
		t.Errorf("held on an external datastore: %s", got)
	}
}
