package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/capk3s/capk3s/test/envtest"
)

// repoRoot is the capk3s checkout this file belongs to.
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test's source file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// kustomize is the pinned kustomize that `make tools` builds next to the envtest binaries.
func kustomize(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(envtest.AssetsDir(), "kustomize")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("kustomize not found: run 'make tools' (or hack/ensure-tools.sh kustomize): %v", err)
	}
	return bin
}

// buildRelease runs the script behind `make release-manifests` into a fresh
// directory, so the tests check what config/ and templates/ produce now, never a
// stale out/.
func buildRelease(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(filepath.Join(repoRoot(t), "hack", "release-manifests.sh"), dir)
	cmd.Env = append(os.Environ(), "KUSTOMIZE="+kustomize(t), "REGISTRY=example.test/capk3s", "TAG=v0.0.0-test")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/release-manifests.sh: %v\n%s", err, out)
	}
	return dir
}

// capiModule is the directory and version of sigs.k8s.io/cluster-api that go.mod pins.
func capiModule(t testing.TB) (dir, version string) {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Version}}", "sigs.k8s.io/cluster-api")
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("locating sigs.k8s.io/cluster-api: %v", err)
	}
	dir, version, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
	if !ok || dir == "" {
		t.Fatalf("sigs.k8s.io/cluster-api is not in the module cache (go mod download): %q", out)
	}
	return dir, version
}

// kustomizeBuild builds dir, a kustomization, into file.
func kustomizeBuild(t testing.TB, dir, file string) {
	t.Helper()
	out, err := exec.Command(kustomize(t), "build", dir).Output()
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	writeFile(t, file, out)
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, data)
}
