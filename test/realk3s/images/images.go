package images

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

const (
	// DefaultPauseImage is the sandbox image k3s v1.35 and v1.36 configure their
	// kubelet and containerd with; the machines cannot pull it, so it is imported.
	DefaultPauseImage = "rancher/mirrored-pause:3.6"
	// WorkloadImage is the reference of the scenarios' workload image. Its tag is not
	// "latest", so pods that name it default to imagePullPolicy IfNotPresent and use
	// the imported image instead of trying to pull.
	WorkloadImage = "capk3s.test/workload:1"

	// PauseEntrypoint is where the pause binary sits in its image.
	PauseEntrypoint = "/pause"
	// WorkloadEntrypoint is where the workload binary sits in its image.
	WorkloadEntrypoint = "/workload"
)

// created is every image's and file's time, so that the same source gives the same
// image.
var created = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// WritePause builds the pause image, tagged ref (DefaultPauseImage for the k3s
// versions the layer runs), for linux and this machine's architecture, and writes it
// as a docker-archive tarball at path.
func WritePause(ctx context.Context, ref, path string) error {
	return write(ctx, "pause", ref, PauseEntrypoint, path)
}

// WriteWorkload builds the workload image, tagged WorkloadImage, for linux and this
// machine's architecture, and writes it as a docker-archive tarball at path.
func WriteWorkload(ctx context.Context, path string) error {
	return write(ctx, "workload", WorkloadImage, WorkloadEntrypoint, path)
}

// write builds program, makes it the image ref and writes the tarball through a
// temporary file, so that a k3s reading the images directory never sees half of one.
func write(ctx context.Context, program, ref, entrypoint, path string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	binary, err := buildProgram(ctx, program)
	if err != nil {
		return err
	}
	image, err := newImage(binary, entrypoint, v1.Platform{OS: "linux", Architecture: runtime.GOARCH})
	if err != nil {
		return fmt.Errorf("the %s image: %w", program, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := tarball.Write(tag, image, tmp); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("writing the %s image to %s: %w", program, path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
