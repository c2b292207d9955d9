package token_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/token"
)

// fakeCAHash stands for the CA hash in secure tokens written to bootstrap data; its
// value does not matter to recovery, only its shape.
const fakeCAHash = "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"

// fixture is one cluster's objects in a namespace of its own.
type fixture struct {
	ns      string
	cluster *clusterv1.Cluster
	kcp     *controlplanev1.KThreesControlPlane
}

// newFixture creates a Cluster "c1" and its KThreesControlPlane "c1-control-plane",
// not initialized.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	requireEnv(t)
	ns := env.NewNamespace(t)
	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"},
		Spec: clusterv1.ClusterSpec{
			ControlPlaneRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: controlplanev1.GroupVersion.Group,
				Kind:     "KThreesControlPlane",
				Name:     "c1-control-plane",
			},
		},
	}
	mustCreate(t, cluster)
	kcp := &controlplanev1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns,
			Name:      "c1-control-plane",
			Labels:    map[string]string{clusterv1.ClusterNameLabel: cluster.Name},
		},
		Spec: controlplanev1.KThreesControlPlaneSpec{
			Version: "v1.31.4+k3s1",
			MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{
				Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: "infrastructure.cluster.x-k8s.io",
						Kind:     "GenericInfrastructureMachineTemplate",
						Name:     "servers",
					},
				},
			},
		},
	}
	mustCreate(t, kcp)
	if kcp.UID == "" {
		t.Fatal("the created KThreesControlPlane has no UID")
	}
	return &fixture{ns: ns, cluster: cluster, kcp: kcp}
}

func mustCreate(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(t.Context(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// markInitialized sets status.initialization.controlPlaneInitialized on the
// KThreesControlPlane, through the status subresource as the controller does.
func (f *fixture) markInitialized(t *testing.T) {
	t.Helper()
	f.kcp.Status.Initialization.ControlPlaneInitialized = new(true)
	if err := env.Client.Status().Update(t.Context(), f.kcp); err != nil {
		t.Fatalf("marking the control plane initialized: %v", err)
	}
	got := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(f.kcp), got); err != nil {
		t.Fatal(err)
	}
	if p := got.Status.Initialization.ControlPlaneInitialized; p == nil || !*p {
		t.Fatal("status.initialization.controlPlaneInitialized did not stick")
	}
	f.kcp = got
}

func (f *fixture) reconcile(t *testing.T, c client.Client) token.Result {
	t.Helper()
	res, err := token.Reconcile(t.Context(), c, f.cluster, f.kcp)
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	return res
}

func (f *fixture) tokenKey() client.ObjectKey {
	return client.ObjectKey{Namespace: f.ns, Name: token.SecretName(f.cluster.Name)}
}

// tokenSecret reads the token Secret, which must exist.
func (f *fixture) tokenSecret(t *testing.T) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Client.Get(t.Context(), f.tokenKey(), s); err != nil {
		t.Fatalf("reading the token Secret: %v", err)
	}
	return s
}

// requireNoTokenSecret fails unless the token Secret does not exist.
func (f *fixture) requireNoTokenSecret(t *testing.T) {
	t.Helper()
	err := env.Client.Get(t.Context(), f.tokenKey(), &corev1.Secret{})
	if err == nil {
		t.Fatal("the token Secret exists; want none")
	}
	if !apierrors.IsNotFound(err) {
		t.Fatalf("reading the token Secret: %v", err)
	}
}

// addServer creates a control-plane Machine of the fixture's cluster whose bootstrap
// data Secret holds data (no Secret at all when data is nil).
func (f *fixture) addServer(t *testing.T, name string, data []byte) {
	t.Helper()
	f.addMachine(t, name, f.cluster.Name, true, data)
}

// addMachine creates a Machine of clusterName, a server or an agent, and its
// bootstrap data Secret holding data (none when data is nil).
func (f *fixture) addMachine(t *testing.T, name, clusterName string, server bool, data []byte) {
	t.Helper()
	dataSecret := name + "-bootstrap"
	if data != nil {
		mustCreate(t, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: f.ns,
				Name:      dataSecret,
				Labels:    map[string]string{clusterv1.ClusterNameLabel: clusterName},
			},
			Type: clusterv1.ClusterSecretType,
			Data: map[string][]byte{"value": data, "format": []byte("cloud-config")},
		})
	}
	labels := map[string]string{clusterv1.ClusterNameLabel: clusterName}
	if server {
		labels[clusterv1.MachineControlPlaneLabel] = ""
	}
	m := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name, Labels: labels},
		Spec: clusterv1.MachineSpec{
			ClusterName: clusterName,
			Bootstrap:   clusterv1.Bootstrap{DataSecretName: &dataSecret},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: "infrastructure.cluster.x-k8s.io",
				Kind:     "GenericInfrastructureMachine",
				Name:     name,
			},
		},
	}
	mustCreate(t, m)
}

// serverCloudConfig is a server's cloud-config that gives k3s these token options
// (either may be empty to leave the option out).
func serverCloudConfig(k3sToken, k3sAgentToken string) []byte {
	var k3s strings.Builder
	k3s.WriteString("write-kubeconfig-mode: \"0644\"\n")
	if k3sToken != "" {
		k3s.WriteString("token: " + k3sToken + "\n")
	}
	if k3sAgentToken != "" {
		k3s.WriteString("agent-token: " + k3sAgentToken + "\n")
	}
	var b strings.Builder
	b.WriteString("#cloud-config\nwrite_files:\n")
	b.WriteString("- path: /etc/rancher/k3s/config.yaml\n  owner: root:root\n  permissions: '0600'\n  content: |\n")
	for _, line := range strings.Split(strings.TrimRight(k3s.String(), "\n"), "\n") {
		b.WriteString("    " + line + "\n")
	}
	b.WriteString("runcmd:\n- 'curl -sfL https://get.k3s.io | INSTALL_K3S_EXEC=server sh -'\n")
	return []byte(b.String())
}

func secureServerToken(pass string) string { return "K10" + fakeCAHash + "::server:" + pass }
func secureAgentToken(pass string) string  { return "K10" + fakeCAHash + "::node:" + pass }

// requireControlledByKCP checks the reference that makes the KThreesControlPlane the
// Secret's controller, field by field.
func (f *fixture) requireControlledByKCP(t *testing.T, s *corev1.Secret) {
	t.Helper()
	ref := metav1.GetControllerOf(s)
	if ref == nil {
		t.Fatalf("the token Secret has no controller; owner references: %+v", s.OwnerReferences)
	}
	if ref.APIVersion != controlplanev1.GroupVersion.String() || ref.Kind != "KThreesControlPlane" ||
		ref.Name != f.kcp.Name || ref.UID != f.kcp.UID {
		t.Errorf("controller = %s %s %s (uid %s), want %s KThreesControlPlane %s (uid %s)",
			ref.APIVersion, ref.Kind, ref.Name, ref.UID, controlplanev1.GroupVersion, f.kcp.Name, f.kcp.UID)
	}
	if ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Error("the controller reference does not block owner deletion")
	}
	n := 0
	for _, r := range s.OwnerReferences {
		if r.Kind == "KThreesControlPlane" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d references to a KThreesControlPlane, want exactly 1: %+v", n, s.OwnerReferences)
	}
}

// requireTokenSecretShape checks what every token Secret made by Reconcile carries.
func (f *fixture) requireTokenSecretShape(t *testing.T, s *corev1.Secret) {
	t.Helper()
	if s.Type != clusterv1.ClusterSecretType {
		t.Errorf("type = %q, want %q", s.Type, clusterv1.ClusterSecretType)
	}
	if got := s.Labels[clusterv1.ClusterNameLabel]; got != f.cluster.Name {
		t.Errorf("label %s = %q, want %q", clusterv1.ClusterNameLabel, got, f.cluster.Name)
	}
	f.requireControlledByKCP(t, s)
}

// requireNoPassphrase fails if msg contains any of the passphrases.
func requireNoPassphrase(t *testing.T, msg string, passphrases ...string) {
	t.Helper()
	for _, p := range passphrases {
		if p != "" && strings.Contains(msg, p) {
			t.Errorf("message %q contains a passphrase", msg)
		}
	}
}

// newKThreesConfig creates a KThreesConfig, the bootstrap object that cluster-api-k3s
// made the token Secret's controller.
func newKThreesConfig(t *testing.T, ns, name string) *bootstrapv1.KThreesConfig {
	t.Helper()
	cfg := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns,
		Name:      name,
		Labels:    map[string]string{clusterv1.ClusterNameLabel: "c1"},
	}}
	mustCreate(t, cfg)
	return cfg
}
