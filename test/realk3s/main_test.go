package realk3s

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/capk3s/capk3s/test/envtest"
	"github.com/capk3s/capk3s/test/realk3s/host"
	"github.com/capk3s/capk3s/test/realk3s/images"
	"github.com/capk3s/capk3s/test/realk3s/minisystemd"
	"github.com/capk3s/capk3s/test/realk3s/provider"
	"github.com/capk3s/capk3s/test/stack"
)

// The layer's inputs, as make test-k3s passes them.
const (
	binEnv        = "CAPK3S_K3S_BIN"
	upgradeBinEnv = "CAPK3S_K3S_BIN_UPGRADE"
	installEnv    = "CAPK3S_K3S_INSTALL_SH"
	dirEnv        = "CAPK3S_REALK3S_DIR"
)

var (
	env     *envtest.Environment
	layer   *host.Layer
	infra   = &provider.Provider{Binaries: map[string]string{}}
	manager envtest.SharedManager
	// k3sVersion is the given binary's version (e.g. v1.36.2+k3s1); upgradeVersion is
	// the second binary's, empty without one.
	k3sVersion, upgradeVersion string
	// skipReason is why the layer does not run, empty when it does.
	skipReason string
)

func TestMain(m *testing.M) {
	if os.Getenv(binEnv) == "" {
		skipReason = fmt.Sprintf("%s is not set: the real-k3s layer runs with make test-k3s K3S_BIN=... K3S_INSTALL_SH=...", binEnv)
		os.Exit(m.Run())
	}
	if err := setUp(); err != nil {
		fmt.Fprintf(os.Stderr, "real-k3s layer: %v\n", err)
		if layer != nil {
			_ = layer.Teardown()
		}
		os.Exit(1)
	}
	envtest.RunMain(m, envtest.Options{GarbageCollector: true, Webhooks: true, CAPIWebhooks: true,
		AfterRun: func() {
			infra.Close()
			s3.stop()
			if err := layer.Teardown(); err != nil {
				fmt.Fprintf(os.Stderr, "real-k3s layer teardown: %v\n", err)
			}
		},
	}, &env)
}

// setUp checks the inputs, builds the supervisor and the images, and starts the
// layer.
func setUp() error {
	if os.Getuid() != 0 {
		return fmt.Errorf("the layer needs root (namespaces, mounts, a bridge)")
	}
	install := os.Getenv(installEnv)
	if install == "" {
		return fmt.Errorf("%s is not set: the layer installs k3s with k3s's install.sh", installEnv)
	}
	var err error
	bin := os.Getenv(binEnv)
	if k3sVersion, err = binaryVersion(bin); err != nil {
		return err
	}
	infra.Binaries[k3sVersion] = bin
	if up := os.Getenv(upgradeBinEnv); up != "" {
		if upgradeVersion, err = binaryVersion(up); err != nil {
			return err
		}
		infra.Binaries[upgradeVersion] = up
	}
	dir := os.Getenv(dirEnv)
	if dir == "" {
		dir = filepath.Join(os.Getenv("HOME"), ".cache", "capk3s", "realk3s")
	}
	artifacts := filepath.Join(dir, "artifacts")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		return err
	}
	ctx := context.Background()
	supervisor := filepath.Join(artifacts, "minisystemd")
	if err := minisystemd.Build(ctx, supervisor); err != nil {
		return fmt.Errorf("building the supervisor: %w", err)
	}
	pause, workload := filepath.Join(artifacts, "pause.tar"), filepath.Join(artifacts, "workload.tar")
	if err := images.WritePause(ctx, images.DefaultPauseImage, pause); err != nil {
		return fmt.Errorf("building the pause image: %w", err)
	}
	if err := images.WriteWorkload(ctx, workload); err != nil {
		return fmt.Errorf("building the workload image: %w", err)
	}
	roots := os.Getenv("CAPK3S_ROOTS")
	if roots == "" {
		roots = filepath.Join(os.Getenv("HOME"), ".cache", "capk3s", "roots")
	}
	layer, err = host.Setup(host.Options{
		Dir: filepath.Join(dir, "run"), Root: filepath.Join(roots, "k3s-node-bookworm"), Supervisor: supervisor,
		InstallScript: install, Images: []string{pause, workload},
	})
	if err != nil {
		return err
	}
	infra.Layer = layer
	if gw := os.Getenv(gatewayEnv); gw != "" {
		if s3, err = startS3(gw, dir); err != nil {
			return err
		}
	}
	return nil
}

var versionLine = regexp.MustCompile(`k3s version (v\S+)`)

// binaryVersion asks a k3s binary its version, as the Machines' spec.version names it.
func binaryVersion(bin string) (string, error) {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	m := versionLine.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("%s --version printed no k3s version: %s", bin, out)
	}
	return string(m[1]), nil
}

// startStack skips the test when the layer does not run, and starts the shared
// manager on the first call: CAPI core, both capk3s providers and their webhooks, and
// the layer's provider.
func startStack(t *testing.T) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	manager.Start(t, env, envtest.ManagerOptions{Webhooks: true}, func(ctx context.Context, mgr ctrl.Manager) error {
		if err := stack.Setup(ctx, mgr, stack.Options{Webhooks: true, CAPIWebhooks: true}); err != nil {
			return err
		}
		infra.Client = mgr.GetClient()
		return infra.SetupWithManager(mgr, stackControllerOptions())
	})
}
