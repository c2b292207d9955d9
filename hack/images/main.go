// Command images builds the capk3s manager images without a container engine (see
// internal/imagebuild): one multi-architecture OCI image layout and one CycloneDX SBOM
// per manager, in the output directory. `make images` runs it.
//
// Usage: go run ./hack/images --registry ghcr.io/capk3s --tag v0.1.0 --out out/images
//
// SOURCE_DATE_EPOCH, when set, overrides the creation time (default: HEAD's commit time).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/capk3s/capk3s/internal/imagebuild"
)

func main() {
	opts := imagebuild.Options{Log: os.Stderr}
	flag.StringVar(&opts.Root, "root", ".", "the capk3s checkout to build")
	flag.StringVar(&opts.Registry, "registry", "ghcr.io/capk3s", "registry the images are named for (REGISTRY)")
	flag.StringVar(&opts.Tag, "tag", "dev", "tag of the images and version stamped in the binaries (TAG)")
	flag.StringVar(&opts.OutDir, "out", "out/images", "directory for the OCI layouts and SBOMs")
	flag.StringVar(&opts.CABundle, "ca-bundle", imagebuild.CABundlePath, "PEM CA bundle to ship in the images")
	flag.Parse()

	if epoch := os.Getenv("SOURCE_DATE_EPOCH"); epoch != "" {
		seconds, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "images: SOURCE_DATE_EPOCH %q is not a number of seconds\n", epoch)
			os.Exit(2)
		}
		opts.Created = time.Unix(seconds, 0)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	results, err := imagebuild.Build(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "images: %v\n", err)
		os.Exit(1)
	}
	for _, r := range results {
		fmt.Printf("%s@%s\n\tlayout %s\n\tSBOM   %s\n", r.Ref, r.Digest, r.Layout, r.SBOM)
	}
}
