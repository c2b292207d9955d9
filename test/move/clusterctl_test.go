package move

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	clusterctlclient "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	clusterctlconfig "sigs.k8s.io/cluster-api/cmd/clusterctl/config"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/capk3s/capk3s/test/envtest"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
)

// inventory is what `clusterctl init` would have recorded on a management cluster
// running this stack: the core provider, both capk3s providers and the simulator as
// the infrastructure provider, each in its own namespace.
var inventory = []clusterctlv1.Provider{
	{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "cluster-api"},
		ProviderName: "cluster-api", Type: string(clusterctlv1.CoreProviderType), Version: "v1.14.2"},
	{ObjectMeta: metav1.ObjectMeta{Namespace: "capk3s-bootstrap-system", Name: "bootstrap-k3s"},
		ProviderName: "k3s", Type: string(clusterctlv1.BootstrapProviderType), Version: "v0.1.0"},
	{ObjectMeta: metav1.ObjectMeta{Namespace: "capk3s-control-plane-system", Name: "control-plane-k3s"},
		ProviderName: "k3s", Type: string(clusterctlv1.ControlPlaneProviderType), Version: "v0.1.0"},
	{ObjectMeta: metav1.ObjectMeta{Namespace: "capk3s-sim-system", Name: "infrastructure-sim"},
		ProviderName: "sim", Type: string(clusterctlv1.InfrastructureProviderType), Version: "v0.1.0"},
}

// prepareForClusterctl makes a test management cluster look to clusterctl as one that
// `clusterctl init` set up: its inventory CRD and Provider objects, and the CRDs of
// the providers labelled as clusterctl labels the CRDs it installs (move discovers
// the kinds to move from that label). It returns the path of an admin kubeconfig file.
func prepareForClusterctl(t *testing.T, ctx context.Context, e *envtest.Environment) string {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(clusterctlconfig.ClusterctlAPIManifest, crd); err != nil {
		t.Fatalf("reading clusterctl's inventory CRD: %v", err)
	}
	if _, err := crenvtest.InstallCRDs(e.Config, crenvtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}}); err != nil {
		t.Fatalf("installing clusterctl's inventory CRD: %v", err)
	}

	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := e.Client.List(ctx, crds); err != nil {
		t.Fatalf("listing CRDs: %v", err)
	}
	for i := range crds.Items {
		c := &crds.Items[i]
		if !providerGroup(c.Spec.Group) {
			continue
		}
		if _, ok := c.Labels[clusterctlv1.ClusterctlLabel]; ok {
			continue
		}
		before := c.DeepCopy()
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[clusterctlv1.ClusterctlLabel] = ""
		if err := e.Client.Patch(ctx, c, client.MergeFrom(before)); err != nil {
			t.Fatalf("labelling CRD %s: %v", c.Name, err)
		}
	}

	scheme := runtime.NewScheme()
	if err := clusterctlv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(e.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("inventory client: %v", err)
	}
	for _, p := range inventory {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.Namespace}}
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating namespace %s: %v", p.Namespace, err)
		}
		p.Labels = map[string]string{clusterctlv1.ClusterctlLabel: "", "clusterctl.cluster.x-k8s.io/provider": p.Name}
		if err := c.Create(ctx, &p); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating inventory Provider %s: %v", p.Name, err)
		}
	}

	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, e.KubeConfig(), 0o600); err != nil {
		t.Fatalf("writing the kubeconfig: %v", err)
	}
	return path
}

// providerGroup says whether a CRD's group is one of the providers': CAPI's, capk3s's
// and the simulator's (clusterctl's own inventory CRD is labelled already).
func providerGroup(group string) bool {
	return strings.HasSuffix(group, ".x-k8s.io") || group == simv1.GroupVersion.Group
}

// clusterctlMove runs clusterctl move of a namespace, as `clusterctl move --kubeconfig
// from --to-kubeconfig to -n namespace` does.
func clusterctlMove(ctx context.Context, dir, from, to, namespace string) error {
	cfg := filepath.Join(dir, "clusterctl.yaml")
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o600); err != nil {
		return err
	}
	c, err := clusterctlclient.New(ctx, cfg)
	if err != nil {
		return fmt.Errorf("clusterctl client: %w", err)
	}
	return c.Move(ctx, clusterctlclient.MoveOptions{
		FromKubeconfig: clusterctlclient.Kubeconfig{Path: from},
		ToKubeconfig:   clusterctlclient.Kubeconfig{Path: to},
		Namespace:      namespace,
	})
}
