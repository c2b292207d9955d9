package imagebuild

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// writeSBOM writes a CycloneDX SBOM of image r: the container (by digest), its manager
// binary for each platform (by SHA-256), the Go modules and standard library each
// binary was compiled from, as its embedded build info records them, and the CA bundle.
// It depends only on its inputs, so it is as reproducible as the image.
func writeSBOM(opts Options, r Result, b base, images []platformImage) error {
	repository := strings.TrimSuffix(r.Ref, ":"+opts.Tag)
	imageRef := "pkg:oci/" + r.Name + "@" + url.QueryEscape(r.Digest) +
		"?repository_url=" + url.QueryEscape(repository) + "&tag=" + url.QueryEscape(opts.Tag)

	caBundle := cdx.Component{
		BOMRef: "file:" + CABundlePath, Type: cdx.ComponentTypeFile, Name: CABundlePath,
		Description: "CA certificates from the build machine's Debian ca-certificates package",
		Hashes:      &[]cdx.Hash{sha256Hash(b.caBundle)},
	}
	components := []cdx.Component{caBundle}
	imageDeps := []string{caBundle.BOMRef}
	var dependencies []cdx.Dependency
	modules := map[string]cdx.Component{}
	for _, pi := range images {
		info, err := buildinfo.Read(bytes.NewReader(pi.binary))
		if err != nil {
			return fmt.Errorf("reading the build info of the %s binary: %w", pi.platform, err)
		}
		app := cdx.Component{
			BOMRef: "binary:" + pi.platform.String(), Type: cdx.ComponentTypeApplication,
			Name: info.Path, Version: info.Main.Version, Hashes: &[]cdx.Hash{sha256Hash(pi.binary)},
			Properties: &[]cdx.Property{
				{Name: "capk3s:platform", Value: pi.platform.String()},
				{Name: "capk3s:path", Value: EntrypointPath},
				{Name: "capk3s:go-version", Value: info.GoVersion},
			},
		}
		components = append(components, app)
		imageDeps = append(imageDeps, app.BOMRef)
		var appDeps []string
		for _, mod := range compiledModules(info) {
			c := moduleComponent(mod)
			modules[c.BOMRef] = c
			appDeps = append(appDeps, c.BOMRef)
		}
		dependencies = append(dependencies, cdx.Dependency{Ref: app.BOMRef, Dependencies: &appDeps})
	}
	for _, ref := range sortedKeys(modules) {
		components = append(components, modules[ref])
	}
	dependencies = append([]cdx.Dependency{{Ref: imageRef, Dependencies: &imageDeps}}, dependencies...)

	bom := cdx.NewBOM()
	bom.SerialNumber = serialNumber(r.Digest)
	bom.Metadata = &cdx.Metadata{
		Timestamp: opts.Created.Format(time.RFC3339),
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
			Type: cdx.ComponentTypeApplication, Name: "capk3s imagebuild", Version: opts.Tag,
		}}},
		Component: &cdx.Component{
			BOMRef: imageRef, Type: cdx.ComponentTypeContainer, Name: repository, Version: opts.Tag,
			PackageURL: imageRef, Hashes: &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: strings.TrimPrefix(r.Digest, "sha256:")}},
		},
	}
	bom.Components = &components
	bom.Dependencies = &dependencies

	f, err := os.Create(r.SBOM)
	if err != nil {
		return fmt.Errorf("writing the SBOM: %w", err)
	}
	enc := cdx.NewBOMEncoder(f, cdx.BOMFileFormatJSON).SetPretty(true)
	if err := enc.Encode(bom); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing the SBOM %s: %w", r.SBOM, err)
	}
	return f.Close()
}

// compiledModules are the main module, every dependency (as replaced, since the
// replacement is what was compiled) and the Go standard library.
func compiledModules(info *debug.BuildInfo) []debug.Module {
	mods := []debug.Module{info.Main, {Path: "stdlib", Version: info.GoVersion}}
	for _, dep := range info.Deps {
		if dep.Replace != nil {
			dep = dep.Replace
		}
		mods = append(mods, *dep)
	}
	return mods
}

// moduleComponent describes a Go module by the package URL scanners look up.
func moduleComponent(mod debug.Module) cdx.Component {
	purl := "pkg:golang/" + mod.Path + "@" + strings.ReplaceAll(url.PathEscape(mod.Version), "+", "%2B")
	if mod.Path != "stdlib" {
		purl += "?type=module"
	}
	c := cdx.Component{BOMRef: purl, Type: cdx.ComponentTypeLibrary, Name: mod.Path, Version: mod.Version, PackageURL: purl}
	if mod.Sum != "" {
		c.Properties = &[]cdx.Property{{Name: "golang:go.sum", Value: mod.Sum}}
	}
	return c
}

func sha256Hash(data []byte) cdx.Hash {
	sum := sha256.Sum256(data)
	return cdx.Hash{Algorithm: cdx.HashAlgoSHA256, Value: hex.EncodeToString(sum[:])}
}

// serialNumber is a UUID (version 5 layout) derived from the image digest, so that the
// same image always gets the same SBOM.
func serialNumber(digest string) string {
	sum := sha256.Sum256([]byte("capk3s-sbom:" + digest))
	u := sum[:16]
	u[6] = (u[6] & 0x0f) | 0x50
	u[8] = (u[8] & 0x3f) | 0x80
	return fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

func sortedKeys(m map[string]cdx.Component) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
