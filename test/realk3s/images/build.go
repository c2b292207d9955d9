package images

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// programsPackage is the import path under which the images' programs live.
const programsPackage = "github.com/capk3s/capk3s/test/realk3s/images/"

// buildProgram builds the program in the directory name of this package (pause or
// workload) for linux and this machine's architecture, and returns the binary. It is
// static (CGO_ENABLED=0: the image has no libc) and reproducible (-trimpath,
// -buildid=, -s -w), like the manager binaries of internal/imagebuild.
func buildProgram(ctx context.Context, name string) ([]byte, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "capk3s-image-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("making a build directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	out := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w -buildid=", "-o", out, programsPackage+name)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if output, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s: %w\n%s", name, err, output)
	}
	binary, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("reading the %s binary: %w", name, err)
	}
	return binary, nil
}

// moduleRoot is the directory of the go.mod governing the current directory, which
// must be inside the capk3s module (tests and the layer run from there).
func moduleRoot(ctx context.Context) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "env", "GOMOD")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go env GOMOD: %w\n%s", err, stderr.Bytes())
	}
	gomod := strings.TrimSpace(stdout.String())
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("the current directory is not inside the capk3s module (go env GOMOD is %q)", gomod)
	}
	return filepath.Dir(gomod), nil
}
