package release

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/capk3s/capk3s/internal/imagebuild"
)

// The registry and tag buildRelease gives the components files, so that the images
// built here must be the ones those files reference.
const (
	testRegistry = "example.test/capk3s"
	testTag      = "v0.0.0-test"
)

// TestImages builds the manager images twice with the code behind `make images` and
// opens them as a cluster would: each image must be the one its components file
// references, hold a runnable static manager for every architecture, run as the
// Deployment's non-root user, trust the public CAs, carry an SBOM of what was compiled
// in, and come out bit-for-bit the same from the same commit.
func TestImages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds four manager binaries twice")
	}
	release := buildRelease(t)
	first := buildImages(t)
	second := buildImages(t)

	if len(first) != len(imagebuild.Managers) {
		t.Fatalf("built %d images, want one per manager (%d)", len(first), len(imagebuild.Managers))
	}
	for i, img := range first {
		t.Run(img.Name, func(t *testing.T) {
			if img.Digest != second[i].Digest {
				t.Errorf("two builds of the same commit differ: %s and %s", img.Digest, second[i].Digest)
			}
			d := componentsDeployment(t, filepath.Join(release, componentsFileOf(t, img.Name)))
			c := managerContainer(t, d)
			if c.Image != img.Ref {
				t.Errorf("components file references %q, built %q", c.Image, img.Ref)
			}
			checkImage(t, img, c)
			checkSBOM(t, img)
		})
	}
}

// buildImages runs the image builder into a fresh directory.
func buildImages(t *testing.T) []imagebuild.Result {
	t.Helper()
	results, err := imagebuild.Build(context.Background(), imagebuild.Options{
		Root:     repoRoot(t),
		Registry: testRegistry,
		Tag:      testTag,
		OutDir:   t.TempDir(),
		Log:      t.Output(),
	})
	if err != nil {
		t.Fatalf("building the images: %v", err)
	}
	return results
}

// componentsFileOf names the components file that deploys image name.
func componentsFileOf(t *testing.T, name string) string {
	t.Helper()
	switch name {
	case "capk3s-bootstrap-controller":
		return "bootstrap-components.yaml"
	case "capk3s-control-plane-controller":
		return "control-plane-components.yaml"
	}
	t.Fatalf("no components file deploys image %s", name)
	return ""
}

// componentsDeployment reads the manager Deployment out of a components file.
func componentsDeployment(t *testing.T, file string) *appsv1.Deployment {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	decoder := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		obj := map[string]any{}
		if err := decoder.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		if obj["kind"] != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, d); err != nil {
			t.Fatalf("the Deployment in %s: %v", file, err)
		}
		return d
	}
	t.Fatalf("no Deployment in %s", file)
	return nil
}
