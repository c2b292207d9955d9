package bootstrap

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/test/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/token"
	"github.com/capk3s/capk3s/test/envtest"
)

const testVersion = "v1.31.4+k3s1"

// newReadyCluster creates a Cluster whose infrastructure is provisioned and whose
// endpoint is known, as the infrastructure provider leaves it.
func newReadyCluster(t *testing.T, ns string) *clusterv1.Cluster {
	t.Helper()
	ctx := context.Background()
	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"},
		Spec: clusterv1.ClusterSpec{
			ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "10.0.0.10", Port: 6443},
			ControlPlaneRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: controlplanev1.GroupVersion.Group, Kind: "KThreesControlPlane", Name: "c1-cp",
			},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureClusterKind, Name: "c1",
			},
		},
	}
	if err := env.Client.Create(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	if err := env.Client.Status().Update(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	return cluster
}

func markInitialized(t *testing.T, cluster *clusterv1.Cluster) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cluster), cluster); err != nil {
		t.Fatal(err)
	}
	cluster.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	if err := env.Client.Status().Update(ctx, cluster); err != nil {
		t.Fatal(err)
	}
}

// newInitializedCluster makes a ready Cluster whose control plane is initialized, with
// the join token and CAs the control plane makes: a config of it renders at once.
func newInitializedCluster(t *testing.T, ns string) *clusterv1.Cluster {
	t.Helper()
	cluster := newReadyCluster(t, ns)
	createToken(t, cluster)
	createCAs(t, cluster)
	markInitialized(t, cluster)
	return cluster
}

// newMachineWithConfig creates a Machine and its KThreesConfig, owned and labelled as
// CAPI's Machine controller leaves them.
func newMachineWithConfig(t *testing.T, cluster *clusterv1.Cluster, name string, server bool, spec bootstrapv1.KThreesConfigSpec) *bootstrapv1.KThreesConfig {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{clusterv1.ClusterNameLabel: cluster.Name}
	if server {
		labels[clusterv1.MachineControlPlaneLabel] = ""
	}
	machine := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: name, Labels: labels},
		Spec: clusterv1.MachineSpec{
			ClusterName: cluster.Name,
			Version:     testVersion,
			Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: bootstrapv1.GroupVersion.Group, Kind: "KThreesConfig", Name: name,
			}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineKind, Name: name,
			},
		},
	}
	if err := env.Client.Create(ctx, machine); err != nil {
		t.Fatal(err)
	}
	config := &bootstrapv1.KThreesConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: name,
			Labels: map[string]string{clusterv1.ClusterNameLabel: cluster.Name}},
		Spec: spec,
	}
	if err := controllerutil.SetControllerReference(machine, config, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, config); err != nil {
		t.Fatal(err)
	}
	return config
}

// createToken makes the join token Secret the way the control plane does.
func createToken(t *testing.T, cluster *clusterv1.Cluster) token.Token {
	t.Helper()
	ctx := context.Background()
	kcp := &controlplanev1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: "c1-cp"},
		Spec: controlplanev1.KThreesControlPlaneSpec{
			Version: testVersion,
			MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{
				Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineTemplateKind, Name: "t",
					},
				},
			},
		},
	}
	if err := env.Client.Create(ctx, kcp); err != nil {
		t.Fatal(err)
	}
	if _, err := token.Reconcile(ctx, env.Client, cluster, kcp); err != nil {
		t.Fatalf("creating the token: %v", err)
	}
	tok, found, err := token.Lookup(ctx, env.Client, cluster)
	if err != nil || !found {
		t.Fatalf("token Lookup = %v, %v", found, err)
	}
	return tok
}

func getConfig(t *testing.T, config *bootstrapv1.KThreesConfig) *bootstrapv1.KThreesConfig {
	t.Helper()
	got := &bootstrapv1.KThreesConfig{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(config), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// waitForReason waits until DataSecretAvailable has the given reason.
func waitForReason(t *testing.T, config *bootstrapv1.KThreesConfig, reason string) {
	t.Helper()
	var last *metav1.Condition
	err := envtest.Eventually(context.Background(), 30*time.Second, func(ctx context.Context) (bool, error) {
		got := &bootstrapv1.KThreesConfig{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(config), got); err != nil {
			return false, err
		}
		last = conditions.Get(got, bootstrapv1.DataSecretAvailableCondition)
		return last != nil && last.Reason == reason, nil
	})
	if err != nil {
		t.Fatalf("%s: DataSecretAvailable never had reason %s; last %+v", config.Name, reason, last)
	}
}

// waitForDataSecret waits for the bootstrap data Secret and returns it.
func waitForDataSecret(t *testing.T, config *bootstrapv1.KThreesConfig) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	// The Secret is created before the status that reports it is patched: both are
	// waited for, so that callers can check either.
	err := envtest.Eventually(context.Background(), 30*time.Second, func(ctx context.Context) (bool, error) {
		got := &bootstrapv1.KThreesConfig{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(config), got); err != nil {
			return false, err
		}
		if got.Status.DataSecretName == "" || !ptr.Deref(got.Status.Initialization.DataSecretCreated, false) {
			return false, nil
		}
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(config), s)
		return err == nil, client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("%s: no bootstrap data Secret reported in status: %v", config.Name, err)
	}
	return s
}

// k3sConfig returns the k3s config file that bootstrap data writes.
func k3sConfig(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var cc struct {
		WriteFiles []struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		} `json:"write_files"`
	}
	if err := yaml.Unmarshal(data, &cc); err != nil {
		t.Fatalf("bootstrap data is not YAML: %v", err)
	}
	for _, f := range cc.WriteFiles {
		if f.Path == "/etc/rancher/k3s/config.yaml" {
			out := map[string]any{}
			if err := yaml.Unmarshal([]byte(f.Content), &out); err != nil {
				t.Fatalf("k3s config is not YAML: %v", err)
			}
			return out
		}
	}
	t.Fatalf("bootstrap data writes no /etc/rancher/k3s/config.yaml:\n%s", data)
	return nil
}

func hasFile(t *testing.T, data []byte, path string) bool {
	t.Helper()
	return strings.Contains(string(data), "path: "+path)
}

func waitFor(cond func(context.Context) (bool, error)) error {
	return envtest.Eventually(context.Background(), 30*time.Second, cond)
}
