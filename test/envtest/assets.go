package envtest

import (
	"fmt"
	"os"
	"path/filepath"
)

// AssetsDir is where etcd, kube-apiserver and kube-controller-manager are found:
// $KUBEBUILDER_ASSETS if set, else the tools cache that hack/ensure-tools.sh fills
// ($CAPK3S_TOOLS_DIR, default $HOME/.cache/capk3s/bin).
func AssetsDir() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	if dir := os.Getenv("CAPK3S_TOOLS_DIR"); dir != "" {
		return dir
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "capk3s", "bin")
	}
	return filepath.Join(home, ".cache", "capk3s", "bin")
}

// requireBinaries fails with a message that says how to build what is missing,
// rather than envtest's attempt to download binaries, which cannot work here.
func requireBinaries(dir string, names ...string) error {
	for _, name := range names {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("%s not found in %s: run 'make tools' (or hack/ensure-tools.sh %s) first: %w", name, dir, name, err)
		}
	}
	return nil
}
