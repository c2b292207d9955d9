package release

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/capk3s/capk3s/internal/imagebuild"
)

// readSBOM decodes img's CycloneDX SBOM, which must describe the image by name, tag
// and digest.
func readSBOM(t *testing.T, img imagebuild.Result) *cdx.BOM {
	t.Helper()
	f, err := os.Open(img.SBOM)
	if err != nil {
		t.Fatalf("the image's SBOM: %v", err)
	}
	defer func() { _ = f.Close() }()
	bom := &cdx.BOM{}
	if err := cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(bom); err != nil {
		t.Fatalf("decoding the SBOM %s: %v", img.SBOM, err)
	}
	return bom
}

// checkSBOM wants the SBOM to name the image it describes: a user matches it to what
// they pulled by digest.
func checkSBOM(t *testing.T, img imagebuild.Result) {
	t.Helper()
	bom := readSBOM(t, img)
	if bom.Metadata == nil || bom.Metadata.Component == nil {
		t.Fatal("the SBOM does not say what it describes")
	}
	c := bom.Metadata.Component
	repo := strings.TrimSuffix(img.Ref, ":"+testTag)
	if c.Type != cdx.ComponentTypeContainer || c.Name != repo || c.Version != testTag {
		t.Errorf("the SBOM describes %s %s:%s, want container %s", c.Type, c.Name, c.Version, img.Ref)
	}
	// A package URL escapes the digest's colon.
	if !strings.Contains(c.PackageURL, "@sha256%3A"+strings.TrimPrefix(img.Digest, "sha256:")) {
		t.Errorf("the SBOM's purl %q lacks the image digest %s", c.PackageURL, img.Digest)
	}
	if c.Hashes == nil || !slices.Contains(*c.Hashes, cdx.Hash{Algorithm: cdx.HashAlgoSHA256, Value: strings.TrimPrefix(img.Digest, "sha256:")}) {
		t.Errorf("the SBOM's image hashes %v lack the image digest %s", c.Hashes, img.Digest)
	}
}

// checkSBOMLists wants the SBOM to list the binary built for one architecture (with
// its hash) and every Go module compiled into it, at the version the binary records.
func checkSBOMLists(t *testing.T, img imagebuild.Result, binary []byte, info *debug.BuildInfo) {
	t.Helper()
	bom := readSBOM(t, img)
	if bom.Components == nil {
		t.Fatal("the SBOM lists no components")
	}
	// Name and version, as the build info records them.
	modules := map[string]bool{}
	for _, c := range *bom.Components {
		if c.Type == cdx.ComponentTypeLibrary && strings.HasPrefix(c.PackageURL, "pkg:golang/") {
			modules[c.Name+"@"+c.Version] = true
		}
	}
	sum := sha256.Sum256(binary)
	if !slices.ContainsFunc(*bom.Components, func(c cdx.Component) bool {
		return c.Type == cdx.ComponentTypeApplication && c.Name == info.Path && c.Hashes != nil &&
			slices.Contains(*c.Hashes, cdx.Hash{Algorithm: cdx.HashAlgoSHA256, Value: hex.EncodeToString(sum[:])})
	}) {
		t.Errorf("the SBOM lists no application %s with the binary's SHA-256 %x", info.Path, sum)
	}
	if !modules[info.Main.Path+"@"+info.Main.Version] {
		t.Errorf("the SBOM lacks the main module %s@%s", info.Main.Path, info.Main.Version)
	}
	if len(info.Deps) < 50 {
		t.Fatalf("the binary records only %d modules; a manager links far more", len(info.Deps))
	}
	for _, dep := range info.Deps {
		if dep.Replace != nil {
			dep = dep.Replace
		}
		if !modules[dep.Path+"@"+dep.Version] {
			t.Errorf("the SBOM lacks module %s@%s, compiled into the binary", dep.Path, dep.Version)
		}
	}
}
