package sim

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/token"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// flannelRig is a cluster whose first server's data sets serverOptions, on the fake
// API of certRig, with bootstrap data for its servers and agents as capk3s renders it.
type flannelRig struct {
	*certRig
	first, join, agent []byte
}

func newFlannelRig(t *testing.T, serverOptions map[string]string) *flannelRig {
	t.Helper()
	g := &flannelRig{certRig: newCertRig(t, &Provider{}, nil)}
	g.wc.port = 30443
	ca := mustCAs(t, theCAs)
	j := mustJoinTokens(t, token.Token{Server: "s3rver", Agent: "ag3nt"}, ca.serverCA)
	var spec bootstrapv1.KThreesConfigSpec
	for k, v := range serverOptions {
		spec.ServerConfig.ExtraConfig = extra(k, v)
	}
	render := func(role cloudinit.Role) []byte {
		in := cloudinit.Input{Role: role, Version: testVersion, Token: j.server, AgentToken: j.agent}
		switch role {
		case cloudinit.Agent:
			in.ServerURL, in.Token, in.AgentToken = g.wc.endpoint(), j.forAgents(), ""
		default:
			in.Spec, in.Certificates, in.TLSSANs = spec, ca.files, []string{"cp.example.com"}
			if role == cloudinit.ServerJoin {
				in.ServerURL = g.wc.endpoint()
			}
		}
		return mustRender(t, in)
	}
	g.first, g.join, g.agent = render(cloudinit.ServerInit), render(cloudinit.ServerJoin), render(cloudinit.Agent)
	// The first server "s-0" started the cluster's API (the rig's fake) with its data.
	b, err := readBootData(g.first, "cloud-config")
	if err == nil {
		err = b.checkStatic()
	}
	if err != nil {
		t.Fatal(err)
	}
	if g.wc.secrets, err = b.initSecrets(); err != nil {
		t.Fatal(err)
	}
	g.wc.initMachine = "s-0"
	return g
}

// boot boots a SimMachine named name from data, on a kernel with or without WireGuard.
func (g *flannelRig) boot(t *testing.T, name string, data []byte, kernelWithoutWireGuard bool) *simv1.SimMachine {
	t.Helper()
	ctx := context.Background()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name + "-data"},
		Data: map[string][]byte{"value": data, "format": []byte("cloud-config")}}
	if err := g.r.p.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	m.Spec.Bootstrap.DataSecretName = ptr.To(s.Name)
	sm := &simv1.SimMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: simv1.SimMachineSpec{KernelWithoutWireGuard: kernelWithoutWireGuard}}
	if _, err := g.r.boot(ctx, sm, m, g.wc); err != nil {
		t.Fatal(err)
	}
	return sm
}

// hasNode tells whether the workload cluster has a Node named name.
func (g *flannelRig) hasNode(t *testing.T, name string) bool {
	t.Helper()
	err := g.work.Get(context.Background(), client.ObjectKey{Name: name}, &corev1.Node{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// joins fails the test unless sm joined: provisioned, Ready, its Node registered.
func (g *flannelRig) joins(t *testing.T, what string, sm *simv1.SimMachine) {
	t.Helper()
	c := conditions.Get(sm, clusterv1.ReadyCondition)
	if !ptr.Deref(sm.Status.Initialization.Provisioned, false) || c == nil || c.Status != metav1.ConditionTrue || !g.hasNode(t, sm.Name) {
		t.Errorf("%s did not join: provisioned %v, Ready %v, Node %v", what, sm.Status.Initialization.Provisioned, c, g.hasNode(t, sm.Name))
	}
}

// exits fails the test unless sm's k3s exited on flannel's WireGuard error: not
// provisioned, no Node, Ready False with reason K3sExited and a message naming the
// cause and the restarts.
func (g *flannelRig) exits(t *testing.T, what, role string, sm *simv1.SimMachine) {
	t.Helper()
	c := conditions.Get(sm, clusterv1.ReadyCondition)
	if ptr.Deref(sm.Status.Initialization.Provisioned, false) || g.hasNode(t, sm.Name) {
		t.Errorf("%s joined, but its k3s exits when flannel cannot create its WireGuard interface", what)
	}
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != k3sExitedReason ||
		!strings.Contains(c.Message, "k3s "+role+" exited: "+k3smodel.FlannelExitMessage) ||
		!strings.Contains(c.Message, "kernel without WireGuard") || !strings.Contains(c.Message, "Restart=always") {
		t.Errorf("%s: Ready = %+v, want False, %s, naming flannel's error, the kernel and the restarts", what, c, k3sExitedReason)
	}
}

// TestWireguardNativeNeedsWireGuardInTheKernel: k3s with flannel-backend
// wireguard-native exits once flannel starts on a kernel without WireGuard, on every
// machine that runs flannel (a server, and an agent, which runs its server's
// backend), and so never joins; the same kernel runs k3s's default backend, and a
// kernel with WireGuard runs wireguard-native.
func TestWireguardNativeNeedsWireGuardInTheKernel(t *testing.T) {
	t.Parallel()
	t.Run("wireguard-native without WireGuard", func(t *testing.T) {
		t.Parallel()
		g := newFlannelRig(t, map[string]string{"flannel-backend": `"wireguard-native"`})
		g.exits(t, "the first server", roleServer, g.boot(t, "s-0", g.first, true))
		g.exits(t, "a joining server", roleServer, g.boot(t, "s-1", g.join, true))
		g.exits(t, "an agent", roleAgent, g.boot(t, "a-0", g.agent, true))
		// The same cluster's machines with WireGuard join.
		g.joins(t, "a server with WireGuard", g.boot(t, "s-2", g.join, false))
		g.joins(t, "an agent with WireGuard", g.boot(t, "a-1", g.agent, false))
	})
	t.Run("default backend without WireGuard", func(t *testing.T) {
		t.Parallel()
		g := newFlannelRig(t, nil)
		g.joins(t, "the first server", g.boot(t, "s-0", g.first, true))
		g.joins(t, "a joining server", g.boot(t, "s-1", g.join, true))
		g.joins(t, "an agent", g.boot(t, "a-0", g.agent, true))
	})
	t.Run("vxlan spelled out without WireGuard", func(t *testing.T) {
		t.Parallel()
		g := newFlannelRig(t, map[string]string{"flannel-backend": `"vxlan"`})
		g.joins(t, "the first server", g.boot(t, "s-0", g.first, true))
		g.joins(t, "an agent", g.boot(t, "a-0", g.agent, true))
	})
	t.Run("wireguard-native with WireGuard", func(t *testing.T) {
		t.Parallel()
		g := newFlannelRig(t, map[string]string{"flannel-backend": `"wireguard-native"`})
		g.joins(t, "the first server", g.boot(t, "s-0", g.first, false))
		g.joins(t, "a joining server", g.boot(t, "s-1", g.join, false))
		g.joins(t, "an agent", g.boot(t, "a-0", g.agent, false))
	})
}

// TestPoolInstanceWithoutWireGuard: a SimMachinePool's instance on a kernel without
// WireGuard does not join a wireguard-native cluster, and says why; on the default
// kernel it joins.
func TestPoolInstanceWithoutWireGuard(t *testing.T) {
	t.Parallel()
	g := newFlannelRig(t, map[string]string{"flannel-backend": `"wireguard-native"`})
	r := &poolReconciler{p: g.r.p}
	data := &poolData{raw: g.agent, format: "cloud-config", hash: "h"}
	inst, reason, msg, err := r.boot(context.Background(), "ns", "pool", true, g.wc, data)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Name != "" || reason != k3sExitedReason || !strings.Contains(msg, k3smodel.FlannelExitMessage) {
		t.Errorf("without WireGuard: instance %q, reason %q, message %q; want none, %s with flannel's error", inst.Name, reason, msg, k3sExitedReason)
	}
	inst, reason, msg, err = r.boot(context.Background(), "ns", "pool", false, g.wc, data)
	if err != nil || reason != "" || inst.Name == "" || !g.hasNode(t, inst.NodeName) {
		t.Errorf("with WireGuard: instance %+v, reason %q (%s), err %v; want a joined instance", inst, reason, msg, err)
	}
}
