package envtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/cluster-api/util/test/builder"
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

// capiCRDDir is Cluster API's core CRD directory in the module cache, at exactly the
// version that go.mod pins.
func capiCRDDir(root string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/cluster-api")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating sigs.k8s.io/cluster-api in the module cache: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "core", "config", "crd", "bases"), nil
}

// crdPaths lists the directories of CRD manifests to install: CAPI core, then ours and
// the simulator's.
func crdPaths() ([]string, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	capi, err := capiCRDDir(root)
	if err != nil {
		return nil, err
	}
	return []string{
		capi,
		filepath.Join(root, "config", "bootstrap", "crd", "bases"),
		filepath.Join(root, "config", "controlplane", "crd", "bases"),
		filepath.Join(root, "test", "sim", "config", "crd", "bases"),
	}, nil
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
