package imagebuild

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// versionPackage receives the release version and revision through -X.
const versionPackage = "github.com/capk3s/capk3s/internal/version"

// buildBinaries cross-compiles every manager for every platform into dir and returns
// their paths by command and platform. The binaries are static (no cgo, so they run on
// an empty filesystem) and reproducible: -trimpath drops local paths, -buildid= the
// build ID, -s -w the symbol tables; the build info (modules, settings, VCS) stays,
// which is what the SBOM is made from.
func buildBinaries(ctx context.Context, opts Options, src source, dir string) (map[string]map[Platform]string, error) {
	ldflags := strings.Join([]string{
		"-s", "-w", "-buildid=",
		"-X", versionPackage + ".Version=" + opts.Tag,
		"-X", versionPackage + ".Revision=" + src.revision,
	}, " ")
	binaries := map[string]map[Platform]string{}
	var packages []string
	for _, m := range Managers {
		packages = append(packages, "./cmd/"+m.Command)
		binaries[m.Command] = map[Platform]string{}
	}
	// One go build per platform: the managers share almost every package.
	for _, p := range Platforms {
		out := filepath.Join(dir, p.OS+"-"+p.Architecture)
		logf(opts.Log, "go build %s for %s", strings.Join(packages, " "), p)
		args := append([]string{"build", "-trimpath", "-ldflags", ldflags, "-o", out + "/"}, packages...)
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = opts.Root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
		if output, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building the managers for %s: %w\n%s", p, err, output)
		}
		for _, m := range Managers {
			binaries[m.Command][p] = filepath.Join(out, m.Command)
		}
	}
	return binaries, nil
}
