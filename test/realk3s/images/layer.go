package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// newImage is an empty image plus one layer holding binary at entrypoint, with a
// config that runs it on platform.
func newImage(binary []byte, entrypoint string, platform v1.Platform) (v1.Image, error) {
	layer, err := binaryLayer(binary, entrypoint)
	if err != nil {
		return nil, fmt.Errorf("the binary layer: %w", err)
	}
	image, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "capk3s test/realk3s/images: " + entrypoint},
	})
	if err != nil {
		return nil, err
	}
	cfg, err := image.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = platform.OS, platform.Architecture
	cfg.Created = v1.Time{Time: created}
	cfg.Config.Entrypoint = []string{entrypoint}
	cfg.Config.WorkingDir = "/"
	return mutate.ConfigFile(image, cfg)
}

// binaryLayer is a gzipped tar with one root-owned executable file at path (directly
// under /, so no parent directory entries are needed), with a fixed time and no
// owner names, and a gzip header without time or name: nothing of the build machine.
func binaryLayer(binary []byte, path string) (v1.Layer, error) {
	if strings.Count(path, "/") != 1 || !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("entrypoint %q is not a file directly under /", path)
	}
	var compressed bytes.Buffer
	zw := gzip.NewWriter(&compressed)
	tw := tar.NewWriter(zw)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     strings.TrimPrefix(path, "/"),
		Mode:     0o755,
		Size:     int64(len(binary)),
		ModTime:  created,
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	data := compressed.Bytes()
	// Given gzip data, go-containerregistry takes it as the layer's blob unchanged.
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
}
