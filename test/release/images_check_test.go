package release

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	corev1 "k8s.io/api/core/v1"

	"github.com/capk3s/capk3s/internal/imagebuild"
)

// The architectures every image must run on: k3s fleets are often ARM.
var wantArchitectures = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// checkImage opens img's OCI layout and checks each architecture's image against the
// container c that deploys it.
func checkImage(t *testing.T, img imagebuild.Result, c corev1.Container) {
	t.Helper()
	index := openIndex(t, img)
	manifest, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(manifest.Manifests) != len(wantArchitectures) {
		t.Errorf("index lists %d images, want %d (one per architecture)", len(manifest.Manifests), len(wantArchitectures))
	}
	for _, desc := range manifest.Manifests {
		if desc.Platform == nil {
			t.Errorf("image %s has no platform in the index", desc.Digest)
			continue
		}
		t.Run(desc.Platform.Architecture, func(t *testing.T) {
			image, err := index.Image(desc.Digest)
			if err != nil {
				t.Fatal(err)
			}
			checkPlatformImage(t, img, image, *desc.Platform, c)
		})
	}
	for arch := range wantArchitectures {
		if !slices.ContainsFunc(manifest.Manifests, func(d v1.Descriptor) bool {
			return d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == arch
		}) {
			t.Errorf("no linux/%s image in %s", arch, img.Ref)
		}
	}
}

// openIndex reads the layout's index.json, which must point at one multi-architecture
// index named img.Ref, with the digest the builder reported.
func openIndex(t *testing.T, img imagebuild.Result) v1.ImageIndex {
	t.Helper()
	top, err := layout.ImageIndexFromPath(img.Layout)
	if err != nil {
		t.Fatalf("opening the OCI layout %s: %v", img.Layout, err)
	}
	topManifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(topManifest.Manifests) != 1 {
		t.Fatalf("layout %s holds %d entries, want one image index", img.Layout, len(topManifest.Manifests))
	}
	desc := topManifest.Manifests[0]
	if desc.Digest.String() != img.Digest {
		t.Errorf("layout holds %s, builder reported %s", desc.Digest, img.Digest)
	}
	// skopeo and crane find an image in a layout by tag, containerd by full reference.
	if got := desc.Annotations["org.opencontainers.image.ref.name"]; got != testTag {
		t.Errorf("layout tags the image %q, want %q", got, testTag)
	}
	if got := desc.Annotations["io.containerd.image.name"]; got != img.Ref {
		t.Errorf("layout names the image %q, want %q", got, img.Ref)
	}
	index, err := top.ImageIndex(desc.Digest)
	if err != nil {
		t.Fatalf("the layout's entry is not an image index: %v", err)
	}
	return index
}

func checkPlatformImage(t *testing.T, img imagebuild.Result, image v1.Image, platform v1.Platform, c corev1.Container) {
	t.Helper()
	machine, known := wantArchitectures[platform.Architecture]
	if !known || platform.OS != "linux" {
		t.Fatalf("unexpected platform %s/%s", platform.OS, platform.Architecture)
	}
	cfg, err := image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != platform.OS || cfg.Architecture != platform.Architecture {
		t.Errorf("config says %s/%s, index says %s/%s", cfg.OS, cfg.Architecture, platform.OS, platform.Architecture)
	}
	if !slices.Equal(cfg.Config.Entrypoint, c.Command) {
		t.Errorf("entrypoint %v, the Deployment runs %v", cfg.Config.Entrypoint, c.Command)
	}
	checkLabels(t, cfg.Config.Labels, cfg.Created.Time)

	files := imageFiles(t, image)
	binary := files[cfg.Config.Entrypoint[0]]
	if binary == nil {
		t.Fatalf("entrypoint %s is not in the image", cfg.Config.Entrypoint[0])
	}
	if binary.Mode&0o111 == 0 {
		t.Errorf("entrypoint mode %o is not executable", binary.Mode)
	}
	checkELF(t, binary.data, machine)
	checkUser(t, cfg.Config.User, files, c)
	checkCABundle(t, files[imagebuild.CABundlePath])
	info := checkBuildInfo(t, binary.data)
	if platform.Architecture == runtime.GOARCH {
		checkHelp(t, binary.data)
	}
	checkSBOMLists(t, img, binary.data, info)
}

// checkLabels wants the OCI labels a registry shows: where the source is, which
// version and commit, and the commit's time as the creation time (which keeps the
// image reproducible).
func checkLabels(t *testing.T, labels map[string]string, created time.Time) {
	t.Helper()
	revision := git(t, "rev-parse", "HEAD")
	commitTime := git(t, "show", "-s", "--format=%cI", "HEAD")
	want := map[string]string{
		"org.opencontainers.image.source":   "https://github.com/capk3s/capk3s",
		"org.opencontainers.image.version":  testTag,
		"org.opencontainers.image.revision": revision,
	}
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, labels[k], v)
		}
	}
	wantCreated, err := time.Parse(time.RFC3339, commitTime)
	if err != nil {
		t.Fatal(err)
	}
	if !created.Equal(wantCreated) || labels["org.opencontainers.image.created"] != wantCreated.UTC().Format(time.RFC3339) {
		t.Errorf("created %s (label %q), want the commit time %s", created, labels["org.opencontainers.image.created"], wantCreated)
	}
}

// checkELF wants a binary for machine with no program interpreter: statically linked,
// so it runs on scratch.
func checkELF(t *testing.T, data []byte, machine elf.Machine) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the entrypoint is not an ELF binary: %v", err)
	}
	if f.Machine != machine {
		t.Errorf("binary for %s, want %s", f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("binary is dynamically linked (has an interpreter)")
		}
	}
}

// checkBuildInfo reads how the binary was built: the capk3s main module, without cgo,
// with reproducible flags and the release version stamped in.
func checkBuildInfo(t *testing.T, data []byte) *debug.BuildInfo {
	t.Helper()
	info, err := buildinfo.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("reading the binary's build info: %v", err)
	}
	if info.Main.Path != "github.com/capk3s/capk3s" {
		t.Errorf("main module %q", info.Main.Path)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
		t.Errorf("built with CGO_ENABLED=%q -trimpath=%q, want 0 and true", settings["CGO_ENABLED"], settings["-trimpath"])
	}
	// With -trimpath Go does not record -ldflags, so look for what -X stamped in.
	for _, want := range []string{testTag, git(t, "rev-parse", "HEAD")} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("the binary does not carry %q (internal/version)", want)
		}
	}
	return info
}

// checkHelp runs the binary as the container would, with --help: it must start.
func checkHelp(t *testing.T, data []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manager")
	if err := os.WriteFile(path, data, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("manager --help: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--leader-elect") {
		t.Errorf("manager --help does not describe its flags:\n%s", out)
	}
}

// checkUser wants the image's user numeric, non-root, the Deployment's runAsUser and
// runAsGroup, and named in /etc/passwd and /etc/group.
func checkUser(t *testing.T, user string, files map[string]*imageFile, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil || sc.RunAsUser == nil || sc.RunAsGroup == nil {
		t.Fatal("the Deployment sets no runAsUser/runAsGroup")
	}
	if *sc.RunAsUser == 0 {
		t.Error("the Deployment runs as root")
	}
	if want := fmt.Sprintf("%d:%d", *sc.RunAsUser, *sc.RunAsGroup); user != want {
		t.Errorf("image user %q, the Deployment runs as %s", user, want)
	}
	passwd, group := files["/etc/passwd"], files["/etc/group"]
	if passwd == nil || group == nil {
		t.Fatal("/etc/passwd or /etc/group missing")
	}
	if !hasEntry(string(passwd.data), 2, *sc.RunAsUser) || !hasEntry(string(passwd.data), 3, *sc.RunAsGroup) {
		t.Errorf("/etc/passwd has no user %d with group %d:\n%s", *sc.RunAsUser, *sc.RunAsGroup, passwd.data)
	}
	if !hasEntry(string(group.data), 2, *sc.RunAsGroup) {
		t.Errorf("/etc/group has no group %d:\n%s", *sc.RunAsGroup, group.data)
	}
}

// hasEntry reports whether a colon-separated database has a line whose field is id.
func hasEntry(db string, field int, id int64) bool {
	for line := range strings.Lines(db) {
		fields := strings.Split(strings.TrimSpace(line), ":")
		if len(fields) > field && fields[field] == fmt.Sprint(id) {
			return true
		}
	}
	return false
}

func checkCABundle(t *testing.T, bundle *imageFile) {
	t.Helper()
	if bundle == nil {
		t.Fatalf("no CA bundle at %s", imagebuild.CABundlePath)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(bundle.data) {
		t.Error("the CA bundle holds no certificate")
	}
	if n := bytes.Count(bundle.data, []byte("BEGIN CERTIFICATE")); n < 50 {
		t.Errorf("the CA bundle holds %d certificates; a public CA bundle has more than 100", n)
	}
}

type imageFile struct {
	*tar.Header
	data []byte
}

// imageFiles reads the image's filesystem as a container runtime would lay it out.
func imageFiles(t *testing.T, image v1.Image) map[string]*imageFile {
	t.Helper()
	rc := mutate.Extract(image)
	defer func() { _ = rc.Close() }()
	files := map[string]*imageFile{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatalf("reading the image's filesystem: %v", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files["/"+strings.TrimPrefix(hdr.Name, "/")] = &imageFile{Header: hdr, data: data}
	}
}

// git runs git in the checkout and returns its trimmed output.
func git(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}
