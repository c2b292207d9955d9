package minisystemd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// cmdPackage is the import path of the binary's main package.
const cmdPackage = "github.com/capk3s/capk3s/test/realk3s/minisystemd/cmd/minisystemd"

// Build compiles the static minisystemd binary (CGO_ENABLED=0) to outPath.
// The machines install it as /usr/bin/systemctl and /bin/systemctl and run
// it as their init.
func Build(ctx context.Context, outPath string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", outPath, cmdPackage)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	// Build from this package's directory so that the module is found
	// whatever the caller's working directory; when the sources are not
	// where the caller was compiled (a -trimpath build), the caller's
	// working directory must be inside the module.
	if _, file, _, ok := runtime.Caller(0); ok {
		if st, err := os.Stat(filepath.Dir(file)); err == nil && st.IsDir() {
			cmd.Dir = filepath.Dir(file)
		}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building minisystemd: %w: %s", err, out)
	}
	return nil
}
