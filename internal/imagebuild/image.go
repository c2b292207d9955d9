package imagebuild

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// platformImage is one platform's image of a manager and the binary in it.
type platformImage struct {
	platform Platform
	image    v1.Image
	binary   []byte
}

// buildImage assembles manager m for every platform into one image index, writes it
// as an OCI layout in opts.OutDir/<image name> and its SBOM beside it.
func buildImage(opts Options, src source, m Manager, b base, binaries map[Platform]string) (Result, error) {
	labels := map[string]string{
		"org.opencontainers.image.title":    m.Image,
		"org.opencontainers.image.source":   opts.Source,
		"org.opencontainers.image.version":  opts.Tag,
		"org.opencontainers.image.revision": src.revision,
		"org.opencontainers.image.created":  opts.Created.Format(time.RFC3339),
	}
	var images []platformImage
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range Platforms {
		binary, err := os.ReadFile(binaries[p])
		if err != nil {
			return Result{}, fmt.Errorf("reading the %s binary: %w", p, err)
		}
		image, err := newPlatformImage(opts.Created, p, labels, b, binary)
		if err != nil {
			return Result{}, fmt.Errorf("%s: %w", p, err)
		}
		images = append(images, platformImage{platform: p, image: image, binary: binary})
		index = mutate.AppendManifests(index, mutate.IndexAddendum{
			Add:        image,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.OS, Architecture: p.Architecture}},
		})
	}
	annotated, ok := mutate.Annotations(index, labels).(v1.ImageIndex)
	if !ok {
		return Result{}, fmt.Errorf("annotating the image index")
	}
	digest, err := annotated.Digest()
	if err != nil {
		return Result{}, fmt.Errorf("digest of the image index: %w", err)
	}
	r := Result{
		Name:   m.Image,
		Ref:    opts.Registry + "/" + m.Image + ":" + opts.Tag,
		Digest: digest.String(),
		Layout: filepath.Join(opts.OutDir, m.Image),
		SBOM:   filepath.Join(opts.OutDir, m.Image+".cdx.json"),
	}
	if err := writeLayout(r, opts.Tag, annotated); err != nil {
		return Result{}, err
	}
	if err := writeSBOM(opts, r, b, images); err != nil {
		return Result{}, err
	}
	return r, nil
}

// newPlatformImage is the base layer, the binary layer and a config that runs the
// binary as the nonroot user.
func newPlatformImage(created time.Time, p Platform, labels map[string]string, b base, binary []byte) (v1.Image, error) {
	binaryLayer, err := newBinaryLayer(created, binary)
	if err != nil {
		return nil, fmt.Errorf("the binary layer: %w", err)
	}
	history := func(what string) v1.History {
		return v1.History{Created: v1.Time{Time: created}, CreatedBy: "capk3s imagebuild: " + what}
	}
	start := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	image, err := mutate.Append(start,
		mutate.Addendum{Layer: b.layer, History: history("users and CA bundle"), MediaType: types.OCILayer},
		mutate.Addendum{Layer: binaryLayer, History: history("manager binary"), MediaType: types.OCILayer},
	)
	if err != nil {
		return nil, err
	}
	cfg, err := image.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = p.OS, p.Architecture
	cfg.Created = v1.Time{Time: created}
	cfg.Config.Entrypoint = []string{EntrypointPath}
	cfg.Config.User = strconv.Itoa(UID) + ":" + strconv.Itoa(GID)
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = labels
	return mutate.ConfigFile(image, cfg)
}

// writeLayout replaces dir with an OCI image layout holding the index, named by tag
// (what skopeo's oci:DIR:TAG and crane read) and by full reference (what containerd
// imports it as).
func writeLayout(r Result, tag string, index v1.ImageIndex) error {
	if err := os.RemoveAll(r.Layout); err != nil {
		return fmt.Errorf("removing the previous layout: %w", err)
	}
	path, err := layout.Write(r.Layout, empty.Index)
	if err != nil {
		return fmt.Errorf("creating the OCI layout %s: %w", r.Layout, err)
	}
	if err := path.AppendIndex(index, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag,
		"io.containerd.image.name":          r.Ref,
	})); err != nil {
		return fmt.Errorf("writing the OCI layout %s: %w", r.Layout, err)
	}
	return nil
}
