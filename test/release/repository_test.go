package release

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	clusterctl "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	"sigs.k8s.io/yaml"
)

// Provider labels as clusterctl forms them (<type>-<name>): also the directory names
// of a local repository and the value of the cluster.x-k8s.io/provider label.
const (
	coreLabel         = "cluster-api"
	bootstrapLabel    = "bootstrap-k3s"
	controlPlaneLabel = "control-plane-k3s"
)

// repository is a clusterctl setup that reads everything from local files.
type repository struct {
	client     clusterctl.Client
	kubeconfig clusterctl.Kubeconfig
	// version is the capk3s version the repository offers, from metadata.yaml.
	version string
	// capiVersion is the Cluster API core version it offers.
	capiVersion string
}

// newRepository lays release (a release-manifests directory) and Cluster API core,
// built from the pinned module, out as clusterctl's local repository
// (<root>/<provider-label>/<version>/...), writes a clusterctl config whose providers
// point there, and returns a clusterctl client for the test apiserver. Nothing is
// fetched from the network.
func newRepository(t *testing.T, release string) repository {
	t.Helper()
	root := t.TempDir()
	version := releaseVersion(t, filepath.Join(release, "metadata.yaml"))

	capiDir, capiVersion := capiModule(t)
	kustomizeBuild(t, filepath.Join(capiDir, "core", "config", "default"),
		filepath.Join(root, coreLabel, capiVersion, "core-components.yaml"))
	copyFile(t, filepath.Join(capiDir, "metadata.yaml"), filepath.Join(root, coreLabel, capiVersion, "metadata.yaml"))
	for label, components := range map[string]string{
		bootstrapLabel:    "bootstrap-components.yaml",
		controlPlaneLabel: "control-plane-components.yaml",
	} {
		for _, f := range []string{components, "metadata.yaml"} {
			copyFile(t, filepath.Join(release, f), filepath.Join(root, label, version, f))
		}
	}

	// The providers: section is what docs/install.md tells users to write, with
	// file:// URLs instead of the release URLs.
	config := fmt.Sprintf(`providers:
- name: cluster-api
  type: CoreProvider
  url: file://%[1]s/%[2]s/%[3]s/core-components.yaml
- name: k3s
  type: BootstrapProvider
  url: file://%[1]s/%[4]s/%[5]s/bootstrap-components.yaml
- name: k3s
  type: ControlPlaneProvider
  url: file://%[1]s/%[6]s/%[5]s/control-plane-components.yaml
cert-manager:
  # The test installs cert-manager's CRDs itself; clusterctl must only find them.
  externallyProvisioned: "true"
  timeout: 30s
`, root, coreLabel, capiVersion, bootstrapLabel, version, controlPlaneLabel)
	configPath := filepath.Join(root, "clusterctl.yaml")
	writeFile(t, configPath, []byte(config))
	// clusterctl keeps state under $XDG_CONFIG_HOME/cluster-api; keep it out of $HOME.
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())

	c, err := clusterctl.New(context.Background(), configPath)
	if err != nil {
		t.Fatalf("creating the clusterctl client: %v", err)
	}
	return repository{
		client:      c,
		kubeconfig:  clusterctl.Kubeconfig{Path: writeKubeconfig(t)},
		version:     version,
		capiVersion: capiVersion,
	}
}

// releaseVersion is the first version of metadata.yaml's newest release series: the
// version clusterctl must accept for a release published with this file.
func releaseVersion(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var md clusterctlv1.Metadata
	if err := yaml.UnmarshalStrict(data, &md); err != nil {
		t.Fatalf("metadata.yaml: %v", err)
	}
	if md.APIVersion != clusterctlv1.GroupVersion.String() || md.Kind != "Metadata" {
		t.Fatalf("metadata.yaml is a %s %s, want %s Metadata", md.APIVersion, md.Kind, clusterctlv1.GroupVersion)
	}
	if len(md.ReleaseSeries) == 0 {
		t.Fatal("metadata.yaml has no release series")
	}
	newest := md.ReleaseSeries[0]
	for _, s := range md.ReleaseSeries[1:] {
		if s.Major > newest.Major || (s.Major == newest.Major && s.Minor > newest.Minor) {
			newest = s
		}
	}
	return fmt.Sprintf("v%d.%d.0", newest.Major, newest.Minor)
}

// writeKubeconfig writes an admin kubeconfig for the test apiserver, for clusterctl,
// which reads its management cluster from a file.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	cfg := env.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
