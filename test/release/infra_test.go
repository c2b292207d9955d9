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

// installInfraCRDs installs the CRDs of the templates' infrastructure kinds where they
// can be found without the network, and returns the apiVersions now served:
//   - CAPD's Docker kinds, from Cluster API's test module if it is in the module cache.
//     capk3s does not depend on that module (it is large and only CAPD's schemas are
//     wanted); `go mod download sigs.k8s.io/cluster-api/test@<version>` provides it;
//   - the simulator's kinds, from test/sim/config/crd/bases when that exists.
//
// Objects of kinds not served are checked by apiVersion only.
func installInfraCRDs(t *testing.T, capiVersion string) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	capd := filepath.Join(strings.TrimSpace(string(out)), "sigs.k8s.io", "cluster-api", "test@"+capiVersion,
		"infrastructure", "docker", "config", "crd", "bases")
	sim := filepath.Join(repoRoot(t), "test", "sim", "config", "crd", "bases")
	served := map[string]bool{}
	for apiVersion, files := range map[string][]string{
		capdAPIVersion: {
			filepath.Join(capd, "infrastructure.cluster.x-k8s.io_dockerclusters.yaml"),
			filepath.Join(capd, "infrastructure.cluster.x-k8s.io_dockerclustertemplates.yaml"),
			filepath.Join(capd, "infrastructure.cluster.x-k8s.io_dockermachinetemplates.yaml"),
		},
		simAPIVersion: {
			filepath.Join(sim, "infrastructure.sim.capk3s.io_simclusters.yaml"),
			filepath.Join(sim, "infrastructure.sim.capk3s.io_simmachinetemplates.yaml"),
		},
	} {
		if _, err := os.Stat(filepath.Dir(files[0])); err != nil {
			t.Logf("%s: CRDs not found (%v); checked by apiVersion only", apiVersion, err)
			continue
		}
		for _, f := range files {
			installCRD(t, f)
		}
		served[apiVersion] = true
	}
	return served
}

func installCRD(t *testing.T, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	ctx := context.Background()
	if err := env.Client.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("installing CRD %s: %v", crd.Name, err)
	}
	if err := waitEstablished(ctx, crd.Name); err != nil {
		t.Fatal(err)
	}
}
