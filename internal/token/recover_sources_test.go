package token_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/token"
)

// renderServer is a server's bootstrap data as the product's renderer writes it.
func renderServer(t *testing.T, format bootstrapv1.Format, role cloudinit.Role, server, agent string) []byte {
	t.Helper()
	in := cloudinit.Input{
		Role: role, Spec: bootstrapv1.KThreesConfigSpec{Format: format}, Version: "v1.31.4+k3s1",
		Token: secureServerToken(server), AgentToken: secureAgentToken(agent),
	}
	if role == cloudinit.ServerJoin {
		in.ServerURL = "https://10.0.0.1:6443"
	}
	data, err := cloudinit.Render(in)
	if err != nil {
		t.Fatalf("rendering %s bootstrap data: %v", format, err)
	}
	return data
}

// addServerWithFormat is addServer with the data Secret's "format" key set.
func (f *fixture) addServerWithFormat(t *testing.T, name, format string, data []byte) {
	t.Helper()
	f.addServer(t, name, data)
	s := &corev1.Secret{}
	key := client.ObjectKey{Namespace: f.ns, Name: name + "-bootstrap"}
	if err := env.Client.Get(t.Context(), key, s); err != nil {
		t.Fatal(err)
	}
	s.Data["format"] = []byte(format)
	if err := env.Client.Update(t.Context(), s); err != nil {
		t.Fatal(err)
	}
}

// A cluster whose KThreesControlPlane renders Ignition: a lost token is read back
// from the servers' Ignition configs, not reported lost.
func TestReconcileRecoversATokenFromIgnitionServers(t *testing.T) {
	f := newFixture(t)
	f.markInitialized(t)
	f.addServerWithFormat(t, "c1-control-plane-aaaaa", "ignition",
		renderServer(t, bootstrapv1.Ignition, cloudinit.ServerInit, "ign-server-pass", "ign-agent-pass"))
	f.addServerWithFormat(t, "c1-control-plane-bbbbb", "ignition",
		renderServer(t, bootstrapv1.Ignition, cloudinit.ServerJoin, "ign-server-pass", "ign-agent-pass"))

	res := f.reconcile(t, env.Client)
	if res.Outcome != token.Recovered {
		t.Fatalf("Outcome = %s, want %s (message %q)", res.Outcome, token.Recovered, res.Message)
	}
	requireNoPassphrase(t, res.Message, "ign-server-pass", "ign-agent-pass")
	s := f.tokenSecret(t)
	if string(s.Data[token.ServerKey]) != "ign-server-pass" || string(s.Data[token.AgentKey]) != "ign-agent-pass" {
		t.Errorf("recovered Secret holds other passphrases than the servers' (%d keys)", len(s.Data))
	}
	f.requireTokenSecretShape(t, s)
}

// Before initialization the first server may be booting from Ignition data: its
// token is kept, not replaced by a second one it never saw.
func TestReconcileBeforeInitKeepsTheTokenAnIgnitionServerBootsWith(t *testing.T) {
	f := newFixture(t)
	f.addServerWithFormat(t, "c1-control-plane-first", "ignition",
		renderServer(t, bootstrapv1.Ignition, cloudinit.ServerInit, "booting-ign-pass", "booting-ign-agent"))

	res := f.reconcile(t, env.Client)
	if res.Outcome != token.Recovered {
		t.Fatalf("Outcome = %s, want %s (message %q)", res.Outcome, token.Recovered, res.Message)
	}
	if got := string(f.tokenSecret(t).Data[token.ServerKey]); got != "booting-ign-pass" {
		t.Error("the token Secret does not hold the passphrase the first server boots with")
	}
}

// serverConfig creates a KThreesConfig that the control plane owns, as it creates
// them for its servers, with its bootstrap data Secret (named after it and
// controlled by it, as the bootstrap provider writes it) holding data. withStatus
// also records the Secret's name in the config's status; without it, the Secret
// exists but the status update that names it has not happened yet.
func (f *fixture) serverConfig(t *testing.T, name string, data []byte, format string, withStatus bool) *bootstrapv1.KThreesConfig {
	t.Helper()
	cfg := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{
		Namespace: f.ns, Name: name,
		Labels: map[string]string{clusterv1.ClusterNameLabel: f.cluster.Name, clusterv1.MachineControlPlaneLabel: ""},
	}}
	if err := controllerutil.SetControllerReference(f.kcp, cfg, env.Scheme); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, cfg)
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name,
			Labels: map[string]string{clusterv1.ClusterNameLabel: f.cluster.Name}},
		Type: clusterv1.ClusterSecretType,
		Data: map[string][]byte{"value": data, "format": []byte(format)},
	}
	if err := controllerutil.SetControllerReference(cfg, s, env.Scheme); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s)
	if withStatus {
		cfg.Status.DataSecretName = s.Name
		cfg.Status.Initialization.DataSecretCreated = new(true)
		if err := env.Client.Status().Update(t.Context(), cfg); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

// serverMachineWithoutData is a server Machine whose bootstrap config is cfg but
// whose spec.bootstrap.dataSecretName CAPI has not set yet.
func (f *fixture) serverMachineWithoutData(t *testing.T, cfg *bootstrapv1.KThreesConfig) {
	t.Helper()
	mustCreate(t, &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: cfg.Name,
			Labels: map[string]string{clusterv1.ClusterNameLabel: f.cluster.Name, clusterv1.MachineControlPlaneLabel: ""}},
		Spec: clusterv1.MachineSpec{
			ClusterName: f.cluster.Name,
			Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: bootstrapv1.GroupVersion.Group, Kind: "KThreesConfig", Name: cfg.Name,
			}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "GenericInfrastructureMachine", Name: cfg.Name,
			},
		},
	})
}

// A server's bootstrap data exists before CAPI names it on the Machine. A token
// lost in that window is recovered from the data Secret of the control plane's
// KThreesConfig, found by the config's status or, before the status names it, by
// the config's name; it is never replaced by a new one.
func TestReconcileRecoversFromAConfigsDataBeforeTheMachineNamesIt(t *testing.T) {
	for _, tc := range []struct {
		name        string
		initialized bool
		withStatus  bool
		format      bootstrapv1.Format
	}{
		{name: "before initialization, status names the Secret", withStatus: true, format: bootstrapv1.CloudConfig},
		{name: "before initialization, status not written yet", format: bootstrapv1.Ignition},
		{name: "after initialization, status names the Secret", initialized: true, withStatus: true, format: bootstrapv1.Ignition},
		{name: "after initialization, status not written yet", initialized: true, format: bootstrapv1.CloudConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.initialized {
				f.markInitialized(t)
			}
			cfg := f.serverConfig(t, "c1-control-plane-fresh",
				renderServer(t, tc.format, cloudinit.ServerInit, "window-pass", "window-agent"), string(tc.format), tc.withStatus)
			f.serverMachineWithoutData(t, cfg)

			res := f.reconcile(t, env.Client)
			if res.Outcome != token.Recovered {
				t.Fatalf("Outcome = %s, want %s (message %q)", res.Outcome, token.Recovered, res.Message)
			}
			s := f.tokenSecret(t)
			if string(s.Data[token.ServerKey]) != "window-pass" || string(s.Data[token.AgentKey]) != "window-agent" {
				t.Error("the token Secret does not hold the passphrases of the server's bootstrap data")
			}
			f.requireTokenSecretShape(t, s)
		})
	}
}

// A Secret that merely has a config's name but is not that config's data (not
// controlled by it) is not read; nor are the configs of agents, whose "token" is
// the agent token.
func TestReconcileReadsOnlyTheControlPlanesConfigData(t *testing.T) {
	f := newFixture(t)
	f.markInitialized(t)
	// An agent's config: not owned by the control plane.
	agentCfg := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "c1-md-0-agent",
		Labels: map[string]string{clusterv1.ClusterNameLabel: f.cluster.Name}}}
	mustCreate(t, agentCfg)
	agentData := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: agentCfg.Name},
		Data:       map[string][]byte{"value": serverCloudConfig(secureAgentToken("agent-pass"), ""), "format": []byte("cloud-config")},
	}
	if err := controllerutil.SetControllerReference(agentCfg, agentData, env.Scheme); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, agentData)
	// A server config of the control plane whose same-named Secret is someone else's.
	cfg := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "c1-control-plane-x",
		Labels: map[string]string{clusterv1.ClusterNameLabel: f.cluster.Name}}}
	if err := controllerutil.SetControllerReference(f.kcp, cfg, env.Scheme); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, cfg)
	mustCreate(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: cfg.Name},
		Data:       map[string][]byte{"value": serverCloudConfig("not-this-one", "")},
	})

	res := f.reconcile(t, env.Client)
	if res.Outcome != token.Lost {
		t.Fatalf("Outcome = %s, want %s (message %q)", res.Outcome, token.Lost, res.Message)
	}
	requireNoPassphrase(t, res.Message, "agent-pass", "not-this-one")
	f.requireNoTokenSecret(t)
}

// Before initialization, a server whose bootstrap data exists but gives no token
// back may still be booting with one: a new token could differ from it, so none is
// generated. A Secret that only shares a config's name is no such evidence.
func TestReconcileBeforeInitGeneratesNothingOnceAServerHasData(t *testing.T) {
	t.Run("a config wrote unreadable data", func(t *testing.T) {
		f := newFixture(t)
		f.serverConfig(t, "c1-control-plane-first", []byte("{not: [yaml"), "cloud-config", false)
		res := f.reconcile(t, env.Client)
		if res.Outcome != token.Lost {
			t.Fatalf("Outcome = %s, want %s (message %q)", res.Outcome, token.Lost, res.Message)
		}
		if !strings.Contains(res.Message, "KThreesConfig c1-control-plane-first has written bootstrap data") {
			t.Errorf("message %q does not say which server may hold the token", res.Message)
		}
		f.requireNoTokenSecret(t)
	})
	t.Run("a Secret with a config's name that the config does not control", func(t *testing.T) {
		f := newFixture(t)
		cfg := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "c1-control-plane-first",
			Labels: map[string]string{clusterv1.ClusterNameLabel: f.cluster.Name}}}
		if err := controllerutil.SetControllerReference(f.kcp, cfg, env.Scheme); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, cfg)
		mustCreate(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: cfg.Name},
			Data: map[string][]byte{"value": []byte("unrelated")}})
		if res := f.reconcile(t, env.Client); res.Outcome != token.Created {
			t.Fatalf("Outcome = %s, want %s (message %q)", res.Outcome, token.Created, res.Message)
		}
	})
}
