package release

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/yaml"
)

// installCAPDCRDs installs the CRDs of the Docker kinds that the CAPD templates use,
// from Cluster API's test module in the module cache, if it is there. capk3s does not
// depend on that module (it is large and only CAPD's schemas are wanted), so on a
// machine without it the Docker objects are only checked by apiVersion; fetch it with
// `go mod download sigs.k8s.io/cluster-api/test@<version>` to check them fully.
func installCAPDCRDs(t *testing.T, capiVersion string) bool {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "sigs.k8s.io", "cluster-api", "test@"+capiVersion,
		"infrastructure", "docker", "config", "crd", "bases")
	if _, err := os.Stat(dir); err != nil {
		t.Logf("CAPD's CRDs not in the module cache (%v): Docker objects are checked by apiVersion only", err)
		return false
	}
	ctx := context.Background()
	for _, kind := range []string{"dockerclusters", "dockerclustertemplates", "dockermachinetemplates"} {
		data, err := os.ReadFile(filepath.Join(dir, "infrastructure.cluster.x-k8s.io_"+kind+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			t.Fatalf("CAPD CRD %s: %v", kind, err)
		}
		if err := env.Client.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("installing CAPD CRD %s: %v", kind, err)
		}
		if err := waitEstablished(ctx, crd.Name); err != nil {
			t.Fatal(err)
		}
	}
	return true
}
