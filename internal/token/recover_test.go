package token_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/token"
	"github.com/capk3s/capk3s/test/envtest"
)

// A token Secret deleted after initialization comes back with the passphrases the
// servers were given, read from their bootstrap data.
func TestReconcileRecoversALostTokenFromServers(t *testing.T) {
	f := newFixture(t)
	f.markInitialized(t)
	f.addServer(t, "c1-control-plane-aaaaa",
		serverCloudConfig(secureServerToken("original-server-pass"), secureAgentToken("original-agent-pass")))
	// An unreadable server and one without bootstrap data do not hide the good one.
	f.addServer(t, "c1-control-plane-bbbbb", []byte("#!/bin/sh\necho not a cloud-config\n"))
	f.addServer(t, "c1-control-plane-ccccc", nil)

	res := f.reconcile(t, env.Client)
	if res.Outcome != token.Recovered {
		t.Fatalf("Outcome = %s, want %s (message %q)", res.Outcome, token.Recovered, res.Message)
	}
	if !res.Available() {
		t.Error("Available() = false after recovering the token")
	}
	requireNoPassphrase(t, res.Message, "original-server-pass", "original-agent-pass")

	s := f.tokenSecret(t)
	if got := string(s.Data[token.ServerKey]); got != "original-server-pass" {
		t.Errorf("value = %q, want original-server-pass", got)
	}
	if got := string(s.Data[token.AgentKey]); got != "original-agent-pass" {
		t.Errorf("agent-value = %q, want original-agent-pass", got)
	}
	f.requireTokenSecretShape(t, s)

	if res := f.reconcile(t, env.Client); res.Outcome != token.Unchanged {
		t.Errorf("next pass: Outcome = %s, want %s", res.Outcome, token.Unchanged)
	}
}

// Servers of a taken-over cluster were given only a server token; the recovered
// Secret has no agent passphrase, so agents keep getting the server token.
func TestReconcileRecoversAServerOnlyToken(t *testing.T) {
	f := newFixture(t)
	f.markInitialized(t)
	f.addServer(t, "c1-control-plane-aaaaa", serverCloudConfig("bare-legacy-pass", ""))
	f.addServer(t, "c1-control-plane-bbbbb", serverCloudConfig("K10::server:bare-legacy-pass", ""))

	if res := f.reconcile(t, env.Client); res.Outcome != token.Recovered {
		t.Fatalf("Outcome = %s, want %s (message %q)", res.Outcome, token.Recovered, res.Message)
	}
	s := f.tokenSecret(t)
	if got := string(s.Data[token.ServerKey]); got != "bare-legacy-pass" {
		t.Errorf("value = %q, want bare-legacy-pass", got)
	}
	if _, ok := s.Data[token.AgentKey]; ok {
		t.Errorf("the recovered Secret has %q; the servers had no agent token", token.AgentKey)
	}
	f.requireControlledByKCP(t, s)
}

// Before initialization, the first server may already be booting with a token whose
// Secret was deleted: that token is kept rather than replaced by a new random one.
func TestReconcileBeforeInitKeepsTheTokenAServerBootsWith(t *testing.T) {
	f := newFixture(t)
	f.addServer(t, "c1-control-plane-first", serverCloudConfig(secureServerToken("booting-pass"), secureAgentToken("booting-agent")))

	res := f.reconcile(t, env.Client)
	if res.Outcome != token.Recovered {
		t.Fatalf("Outcome = %s, want %s (message %q)", res.Outcome, token.Recovered, res.Message)
	}
	s := f.tokenSecret(t)
	if got := string(s.Data[token.ServerKey]); got != "booting-pass" {
		t.Errorf("value = %q, want the first server's booting-pass", got)
	}
	if got := string(s.Data[token.AgentKey]); got != "booting-agent" {
		t.Errorf("agent-value = %q, want the first server's booting-agent", got)
	}
	f.requireTokenSecretShape(t, s)
}

// After initialization a missing token that no server's bootstrap data holds is
// reported as lost; nothing is created, since a new random token would lock every
// new machine out.
func TestReconcileReportsALostToken(t *testing.T) {
	lostCases := []struct {
		name  string
		setup func(t *testing.T, f *fixture)
		// passphrases present somewhere that the message must not show
		secrets []string
	}{
		{
			name:  "no machines",
			setup: func(t *testing.T, f *fixture) { f.markInitialized(t) },
		},
		{
			name: "the Cluster says initialized, the control plane does not yet",
			setup: func(t *testing.T, f *fixture) {
				f.cluster.Status.Initialization.ControlPlaneInitialized = new(true)
				if err := env.Client.Status().Update(t.Context(), f.cluster); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "servers without readable bootstrap data",
			setup: func(t *testing.T, f *fixture) {
				f.markInitialized(t)
				f.addServer(t, "c1-control-plane-aaaaa", nil)
				f.addServer(t, "c1-control-plane-bbbbb", []byte("{not: [yaml"))
				f.addServer(t, "c1-control-plane-ccccc", serverCloudConfig("", ""))
			},
		},
		{
			name: "tokens only on agents and on another cluster's servers",
			setup: func(t *testing.T, f *fixture) {
				f.markInitialized(t)
				// An agent's "token" is the agent token: taking it as the server's
				// would be wrong.
				f.addMachine(t, "c1-md-0-agent", f.cluster.Name, false, serverCloudConfig(secureAgentToken("agent-pass"), ""))
				f.addMachine(t, "c2-control-plane-aaaaa", "c2", true, serverCloudConfig(secureServerToken("c2-pass"), ""))
			},
			secrets: []string{"agent-pass", "c2-pass"},
		},
		{
			name: "servers disagree",
			setup: func(t *testing.T, f *fixture) {
				f.markInitialized(t)
				f.addServer(t, "c1-control-plane-aaaaa", serverCloudConfig(secureServerToken("pass-one"), secureAgentToken("agent-one")))
				f.addServer(t, "c1-control-plane-bbbbb", serverCloudConfig(secureServerToken("pass-two"), secureAgentToken("agent-one")))
			},
			secrets: []string{"pass-one", "pass-two", "agent-one"},
		},
		{
			// Conservative: which agent token would the other server accept? Even
			// before initialization nothing is picked.
			name: "servers agree on the server token but not the agent token, before initialization",
			setup: func(t *testing.T, f *fixture) {
				f.addServer(t, "c1-control-plane-aaaaa", serverCloudConfig("pass-one", ""))
				f.addServer(t, "c1-control-plane-bbbbb", serverCloudConfig("pass-one", "agent-only-here"))
			},
			secrets: []string{"pass-one", "agent-only-here"},
		},
	}
	for _, tc := range lostCases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.setup(t, f)
			c, err := env.NewCountingClient()
			if err != nil {
				t.Fatal(err)
			}

			res, err := token.Reconcile(t.Context(), c, f.cluster, f.kcp)
			if err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			if res.Outcome != token.Lost {
				t.Fatalf("Outcome = %s, want %s (message %q)", res.Outcome, token.Lost, res.Message)
			}
			if res.Available() {
				t.Error("Available() = true for a lost token")
			}
			if res.Message == "" || !strings.Contains(res.Message, "missing") {
				t.Errorf("Message = %q, want an explanation that the Secret is missing", res.Message)
			}
			requireNoPassphrase(t, res.Message, tc.secrets...)
			if c.Writes() != 0 {
				t.Errorf("writes = %v, want none", c.Counts())
			}
			f.requireNoTokenSecret(t)
		})
	}
}

// The message of a token lost without any server tells users what to restore.
func TestLostMessageNamesTheSecretToRestore(t *testing.T) {
	f := newFixture(t)
	f.markInitialized(t)
	res := f.reconcile(t, env.Client)
	if res.Outcome != token.Lost {
		t.Fatalf("Outcome = %s, want %s", res.Outcome, token.Lost)
	}
	for _, want := range []string{token.SecretName(f.cluster.Name), token.ServerKey} {
		if !strings.Contains(res.Message, want) {
			t.Errorf("Message %q does not mention %q", res.Message, want)
		}
	}
}

// An existing but empty token Secret after initialization is treated like a missing
// one: recovered from the servers when they have it, never regenerated.
func TestReconcileEmptySecretAfterInit(t *testing.T) {
	newEmpty := func(t *testing.T, f *fixture) *corev1.Secret {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: token.SecretName(f.cluster.Name),
				Labels: map[string]string{clusterv1.ClusterNameLabel: f.cluster.Name}},
			Type: clusterv1.ClusterSecretType,
		}
		mustCreate(t, s)
		return s
	}
	t.Run("recovered", func(t *testing.T) {
		f := newFixture(t)
		f.markInitialized(t)
		f.addServer(t, "c1-control-plane-aaaaa", serverCloudConfig(secureServerToken("srv"), secureAgentToken("agt")))
		newEmpty(t, f)
		if res := f.reconcile(t, env.Client); res.Outcome != token.Recovered {
			t.Fatalf("Outcome = %s, want %s", res.Outcome, token.Recovered)
		}
		s := f.tokenSecret(t)
		if string(s.Data[token.ServerKey]) != "srv" || string(s.Data[token.AgentKey]) != "agt" {
			t.Errorf("data = %d keys, want value=srv agent-value=agt", len(s.Data))
		}
		f.requireTokenSecretShape(t, s)
	})
	t.Run("lost", func(t *testing.T) {
		f := newFixture(t)
		f.markInitialized(t)
		before := newEmpty(t, f)
		c, err := env.NewCountingClient()
		if err != nil {
			t.Fatal(err)
		}
		res, err := token.Reconcile(t.Context(), c, f.cluster, f.kcp)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != token.Lost || res.Available() {
			t.Errorf("Outcome = %s, want %s", res.Outcome, token.Lost)
		}
		after := &corev1.Secret{}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(before), after); err != nil {
			t.Fatal(err)
		}
		if len(after.Data[token.ServerKey]) != 0 {
			t.Error("a token was generated for an initialized cluster")
		}
		// The one write fixes ownership, so that the Secret survives until a user
		// restores its value; a second pass then writes nothing.
		if c.Writes() != 1 || c.Count(envtest.VerbPatch) != 1 {
			t.Errorf("writes = %v, want exactly one patch", c.Counts())
		}
		if ctl := metav1.GetControllerOf(after); ctl == nil || ctl.UID != f.kcp.UID {
			t.Errorf("controller = %+v, want the control plane", ctl)
		}
		c.Reset()
		if _, err := token.Reconcile(t.Context(), c, f.cluster, f.kcp); err != nil {
			t.Fatal(err)
		}
		if c.Writes() != 0 {
			t.Errorf("second pass writes = %v, want none", c.Counts())
		}
	})
}
