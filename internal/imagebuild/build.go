// Package imagebuild builds the capk3s manager images without a container engine:
// static Go binaries for every platform, laid on an empty (scratch) filesystem with a
// CA bundle and a non-root user, assembled with go-containerregistry into one
// multi-architecture OCI image index per manager, written as an OCI image layout with
// a CycloneDX SBOM beside it. The same commit gives the same digests: file times come
// from the commit, entries are sorted, and the binaries carry no build IDs or paths.
//
// hack/images (`make images`) runs it for a release; test/release runs it to check
// the images.
package imagebuild

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Manager is one manager binary and the image that ships it.
type Manager struct {
	// Command is the main package under cmd/.
	Command string
	// Image is the image name under the registry, as the components files reference it.
	Image string
}

// Managers are the images a release ships.
var Managers = []Manager{
	{Command: "bootstrap-manager", Image: "capk3s-bootstrap-controller"},
	{Command: "controlplane-manager", Image: "capk3s-control-plane-controller"},
}

// Platform is an operating system and architecture an image runs on.
type Platform struct{ OS, Architecture string }

func (p Platform) String() string { return p.OS + "/" + p.Architecture }

// Platforms are the platforms every image is built for; k3s fleets are often ARM.
var Platforms = []Platform{{"linux", "amd64"}, {"linux", "arm64"}}

const (
	// EntrypointPath is where the manager binary sits in the image; the Deployment in
	// config/shared/manager runs it as its command.
	EntrypointPath = "/manager"
	// CABundlePath is where Go's crypto/x509 looks for the system roots on Linux.
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
	// UID is the image's user, named nonroot like distroless's. It must equal runAsUser
	// in config/shared/manager/manager.yaml (test/release checks).
	UID = 65532
	// GID is the nonroot user's group; it must equal runAsGroup there.
	GID = 65532
	// DefaultSource is where the source of the images lives (the OCI source label).
	DefaultSource = "https://github.com/capk3s/capk3s"
)

// Options say what to build and where.
type Options struct {
	// Root is the capk3s checkout to build from.
	Root string
	// Registry and Tag name the images: Registry/Image:Tag, as in the components files.
	Registry, Tag string
	// OutDir receives one OCI layout directory and one SBOM per image.
	OutDir string
	// CABundle is the PEM bundle to ship (default: the build machine's, from Debian's
	// ca-certificates package).
	CABundle string
	// Source is the OCI source label (default DefaultSource).
	Source string
	// Created is the images' creation time (default: the commit time of Root's HEAD).
	Created time.Time
	// Log receives progress lines (default: discarded).
	Log io.Writer
}

// Result describes one built image.
type Result struct {
	// Name is the image name without registry or tag, e.g. capk3s-bootstrap-controller.
	Name string
	// Ref is Registry/Name:Tag.
	Ref string
	// Digest is the digest of the multi-architecture image index ("sha256:...").
	Digest string
	// Layout is the OCI image layout directory holding the image.
	Layout string
	// SBOM is the CycloneDX JSON file describing the image.
	SBOM string
}

// Build builds every manager image for every platform into opts.OutDir.
func Build(ctx context.Context, opts Options) ([]Result, error) {
	opts, src, err := complete(opts)
	if err != nil {
		return nil, err
	}
	logf(opts.Log, "building %d images for %v from %s (created %s)", len(Managers), Platforms, src.revision, opts.Created.Format(time.RFC3339))
	binDir, err := os.MkdirTemp("", "capk3s-images-")
	if err != nil {
		return nil, fmt.Errorf("creating a directory for the binaries: %w", err)
	}
	defer func() { _ = os.RemoveAll(binDir) }()
	binaries, err := buildBinaries(ctx, opts, src, binDir)
	if err != nil {
		return nil, err
	}
	base, err := newBaseLayer(opts)
	if err != nil {
		return nil, err
	}
	var results []Result
	for _, m := range Managers {
		r, err := buildImage(opts, src, m, base, binaries[m.Command])
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", m.Image, err)
		}
		logf(opts.Log, "%s@%s in %s", r.Ref, r.Digest, r.Layout)
		results = append(results, r)
	}
	return results, nil
}

// complete fills in defaults and reads the checkout's revision.
func complete(opts Options) (Options, source, error) {
	if opts.Root == "" || opts.Registry == "" || opts.Tag == "" || opts.OutDir == "" {
		return opts, source{}, errors.New("root, registry, tag and output directory are required")
	}
	if opts.CABundle == "" {
		opts.CABundle = CABundlePath
	}
	if opts.Source == "" {
		opts.Source = DefaultSource
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	src, err := readSource(opts.Root)
	if err != nil {
		return opts, source{}, err
	}
	if opts.Created.IsZero() {
		opts.Created = src.commitTime
	}
	opts.Created = opts.Created.UTC().Truncate(time.Second)
	out, err := filepath.Abs(opts.OutDir)
	if err != nil {
		return opts, source{}, fmt.Errorf("output directory: %w", err)
	}
	opts.OutDir = out
	return opts, src, nil
}

func logf(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, "images: "+format+"\n", args...)
}
