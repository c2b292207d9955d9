package bootstrap

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/token"
)

// The first server waits for the token, and the token Secret's creation alone wakes
// it: the reconciler never asks to be requeued after a delay, so nothing but the
// Secret watch can bring it back before the test's deadline.
func TestFirstServerWaitsForTheTokenAndIsWokenByIt(t *testing.T) {
	startManager(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster := newReadyCluster(t, ns)
	config := newMachineWithConfig(t, cluster, "server-0", true, bootstrapv1.KThreesConfigSpec{
		ServerConfig: bootstrapv1.KThreesServerConfig{DisableComponents: []string{"traefik"}},
	})

	waitForReason(t, config, bootstrapv1.WaitingForTokenReason)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(config), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("bootstrap data exists before the token (Get = %v)", err)
	}

	tok := createToken(t, cluster)
	s := waitForDataSecret(t, config)

	if s.Type != clusterv1.ClusterSecretType || string(s.Data["format"]) != "cloud-config" {
		t.Errorf("data Secret type %q format %q, want %q cloud-config", s.Type, s.Data["format"], clusterv1.ClusterSecretType)
	}
	if !metav1.IsControlledBy(s, getConfig(t, config)) {
		t.Errorf("data Secret is not controlled by its KThreesConfig: %+v", s.OwnerReferences)
	}
	ca, err := secret.Get(ctx, env.Client, client.ObjectKeyFromObject(cluster), secret.ClusterCA)
	if err != nil {
		t.Fatalf("the first server did not create the cluster CA: %v", err)
	}
	cfg := k3sConfig(t, s.Data["value"])
	wantToken, _ := tok.ServerJoinToken(ca.Data[secret.TLSCrtDataName])
	if cfg["token"] != wantToken {
		t.Errorf("token = %v, want the CA-pinned server token", cfg["token"])
	}
	if cfg["cluster-init"] != true || cfg["server"] != nil {
		t.Errorf("first server: cluster-init %v, server %v; want true and none", cfg["cluster-init"], cfg["server"])
	}
	for _, path := range []string{k3s.ServerCACertPath, k3s.ServerCAKeyPath, k3s.ClientCACertPath, k3s.EtcdCAKeyPath} {
		if !hasFile(t, s.Data["value"], path) {
			t.Errorf("bootstrap data does not write %s", path)
		}
	}

	got := getConfig(t, config)
	if got.Status.DataSecretName != config.Name || got.Status.Initialization.DataSecretCreated == nil || !*got.Status.Initialization.DataSecretCreated {
		t.Errorf("status = %+v, want dataSecretName %s and dataSecretCreated", got.Status, config.Name)
	}
	if !conditions.IsTrue(got, clusterv1.ReadyCondition) || !conditions.IsTrue(got, bootstrapv1.CertificatesAvailableCondition) {
		t.Errorf("conditions = %+v, want Ready and CertificatesAvailable true", got.Status.Conditions)
	}
}

// Two servers racing before initialization: exactly one gets cluster-init, the other
// waits and joins the endpoint once the cluster is initialized.
func TestOnlyOneServerInitializes(t *testing.T) {
	startManager(t)
	ns := env.NewNamespace(t)
	cluster := newReadyCluster(t, ns)
	createToken(t, cluster)
	a := newMachineWithConfig(t, cluster, "server-a", true, bootstrapv1.KThreesConfigSpec{})
	b := newMachineWithConfig(t, cluster, "server-b", true, bootstrapv1.KThreesConfigSpec{})

	// One of them gets data; the other must be waiting for the lock.
	var first, second *bootstrapv1.KThreesConfig
	err := eventuallyOneOf(t, a, b, &first, &second)
	if err != nil {
		t.Fatal(err)
	}
	waitForReason(t, second, bootstrapv1.WaitingForInitLockReason)
	if cfg := k3sConfig(t, waitForDataSecret(t, first).Data["value"]); cfg["cluster-init"] != true {
		t.Errorf("%s: cluster-init = %v, want true", first.Name, cfg["cluster-init"])
	}

	markInitialized(t, cluster)
	cfg := k3sConfig(t, waitForDataSecret(t, second).Data["value"])
	if cfg["cluster-init"] != nil || cfg["server"] != "https://10.0.0.10:6443" {
		t.Errorf("%s joins with cluster-init %v, server %v; want none and https://10.0.0.10:6443", second.Name, cfg["cluster-init"], cfg["server"])
	}
}

// An agent gets the agent token and nothing that carries the server passphrase or
// the CA keys.
func TestAgentGetsOnlyTheAgentToken(t *testing.T) {
	startManager(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster := newReadyCluster(t, ns)
	tok := createToken(t, cluster)
	// The CAs are made by the first server (or the control plane); make them here.
	if err := k3s.ClusterCertificates().LookupOrGenerate(ctx, env.Client, client.ObjectKeyFromObject(cluster),
		metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cluster.Name, UID: cluster.UID}); err != nil {
		t.Fatal(err)
	}
	agent := newMachineWithConfig(t, cluster, "agent-0", false, bootstrapv1.KThreesConfigSpec{
		AgentConfig: bootstrapv1.KThreesAgentConfig{NodeLabels: []string{"pool=a"}},
	})
	waitForReason(t, agent, bootstrapv1.WaitingForControlPlaneInitializationReason)

	markInitialized(t, cluster)
	s := waitForDataSecret(t, agent)
	data := string(s.Data["value"])
	if strings.Contains(data, tok.Server) {
		t.Error("the agent's bootstrap data contains the server passphrase")
	}
	if strings.Contains(data, "PRIVATE KEY") {
		t.Error("the agent's bootstrap data contains a private key")
	}
	cfg := k3sConfig(t, s.Data["value"])
	if got, _ := cfg["token"].(string); token.Passphrase(got) != tok.Agent || !strings.Contains(got, "::node:") {
		t.Errorf("agent token does not carry the agent passphrase in the node form")
	}
	if cfg["agent-token"] != nil || cfg["cluster-init"] != nil || cfg["server"] != "https://10.0.0.10:6443" {
		t.Errorf("agent config: agent-token %v, cluster-init %v, server %v", cfg["agent-token"], cfg["cluster-init"], cfg["server"])
	}
}

// A bad version is reported on the config and produces no data.
func TestBadVersionIsReported(t *testing.T) {
	startManager(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster := newReadyCluster(t, ns)
	createToken(t, cluster)
	markInitialized(t, cluster)
	// The schema refuses most bad versions; one that passes it but is not k3s's:
	config := newMachineWithConfig(t, cluster, "agent-bad", false, bootstrapv1.KThreesConfigSpec{Version: "v1.31.4+rke2r1"})

	waitForReason(t, config, bootstrapv1.DataSecretGenerationFailedReason)
	got := getConfig(t, config)
	if c := conditions.Get(got, bootstrapv1.DataSecretAvailableCondition); !strings.Contains(c.Message, "not a k3s version") {
		t.Errorf("message %q does not say what is wrong", c.Message)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(config), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("bootstrap data was created for a bad version (Get = %v)", err)
	}
}

func eventuallyOneOf(t *testing.T, a, b *bootstrapv1.KThreesConfig, first, second **bootstrapv1.KThreesConfig) error {
	t.Helper()
	s := &corev1.Secret{}
	return waitFor(func(ctx context.Context) (bool, error) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(a), s); err == nil {
			*first, *second = a, b
			return true, nil
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(b), s); err == nil {
			*first, *second = b, a
			return true, nil
		}
		return false, nil
	})
}
