package envtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/cluster-api/util/test/builder"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// repoRoot is the capk3s module root, found from this file's location so that tests
// in any package find the generated CRDs.
func repoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the envtest package source")
	}
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above %s", file)
		}
		dir = parent
	}
}

// capiModuleDir is Cluster API's module in the module cache, at exactly the version
// that go.mod pins.
func capiModuleDir(root string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/cluster-api")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating sigs.k8s.io/cluster-api in the module cache: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// crdPaths lists the directories of the CRD manifests that envtest installs as they
// are: CAPI core's (which the tests install without their conversion webhooks), the
// simulator's and the real-k3s layer's. capk3s's own are read by capk3sCRDs.
func crdPaths() ([]string, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	capi, err := capiModuleDir(root)
	if err != nil {
		return nil, err
	}
	return []string{filepath.Join(capi, "core", "config", "crd", "bases"), filepath.Join(root, "test", "sim", "config", "crd", "bases"),
		filepath.Join(root, "test", "realk3s", "config", "crd", "bases")}, nil
}

// capk3sCRDs reads capk3s's generated CRDs (config/*/crd/bases).
func capk3sCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	o := envtest.CRDInstallOptions{
		Paths: []string{
			filepath.Join(root, "config", "bootstrap", "crd", "bases"),
			filepath.Join(root, "config", "controlplane", "crd", "bases"),
		},
		ErrorIfPathMissing: true,
	}
	if err := envtest.ReadCRDFiles(&o); err != nil {
		return nil, fmt.Errorf("reading capk3s's CRDs: %w", err)
	}
	return o.CRDs, nil
}

// setConversionWebhooks points every CRD of crds that serves more than one version at
// conversion (the local webhook server's /convert), as the release manifests point
// them at the manager's Service. controller-runtime's envtest does this only for kinds
// whose Go types implement conversion.Hub and Convertible; ours convert through
// converters registered with the webhook builder instead, so the CRDs are set here.
// Single-version CRDs are left without conversion.
func setConversionWebhooks(crds []*apiextensionsv1.CustomResourceDefinition, conversion *apiextensionsv1.CustomResourceConversion) {
	for _, crd := range crds {
		if ServesVersions(crd) > 1 {
			crd.Spec.Conversion = conversion.DeepCopy()
		}
	}
}

// ServesVersions counts the versions crd serves.
func ServesVersions(crd *apiextensionsv1.CustomResourceDefinition) int {
	served := 0
	for _, v := range crd.Spec.Versions {
		if v.Served {
			served++
		}
	}
	return served
}

// localConversion is webhook conversion through the local webhook server's /convert,
// trusting envtest's serving CA.
func localConversion(o envtest.WebhookInstallOptions) *apiextensionsv1.CustomResourceConversion {
	host := o.LocalServingHostExternalName
	if host == "" {
		host = o.LocalServingHost
	}
	url := "https://" + net.JoinHostPort(host, strconv.Itoa(o.LocalServingPort)) + "/convert"
	return &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{
				URL:      &url,
				CABundle: o.LocalServingCAData,
			},
		},
	}
}

// LocalConversion is the conversion setting that Start gave capk3s's CRDs that serve
// more than one version (the local webhook server's /convert), for a test that
// changed it to put it back; nil when the environment serves no webhooks.
func (e *Environment) LocalConversion() *apiextensionsv1.CustomResourceConversion {
	if len(e.env.WebhookInstallOptions.LocalServingCAData) == 0 {
		return nil
	}
	return localConversion(e.env.WebhookInstallOptions)
}

// genericProviderCRDs are CAPI's generic infrastructure/bootstrap/control-plane test
// kinds, so that tests can point Machines at an infrastructure without a real provider.
func genericProviderCRDs() []*apiextensionsv1.CustomResourceDefinition {
	return []*apiextensionsv1.CustomResourceDefinition{
		builder.GenericInfrastructureClusterCRD.DeepCopy(),
		builder.GenericInfrastructureClusterTemplateCRD.DeepCopy(),
		builder.GenericInfrastructureMachineCRD.DeepCopy(),
		builder.GenericInfrastructureMachineTemplateCRD.DeepCopy(),
		builder.GenericInfrastructureMachinePoolCRD.DeepCopy(),
		builder.GenericInfrastructureMachinePoolTemplateCRD.DeepCopy(),
		builder.GenericBootstrapConfigCRD.DeepCopy(),
		builder.GenericBootstrapConfigTemplateCRD.DeepCopy(),
		builder.GenericControlPlaneCRD.DeepCopy(),
		builder.GenericControlPlaneTemplateCRD.DeepCopy(),
		builder.GenericRemediationCRD.DeepCopy(),
		builder.GenericRemediationTemplateCRD.DeepCopy(),
	}
}
