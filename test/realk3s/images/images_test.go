package images

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImages builds both tarballs, reads them back as containerd's import would find
// them, and runs the binaries taken out of the images' layers.
func TestImages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	pausePath := filepath.Join(dir, "pause.tar")
	workloadPath := filepath.Join(dir, "workload.tar")
	if err := WritePause(ctx, DefaultPauseImage, pausePath); err != nil {
		t.Fatal(err)
	}
	if err := WriteWorkload(ctx, workloadPath); err != nil {
		t.Fatal(err)
	}

	t.Run("pause", func(t *testing.T) {
		binary := checkImage(t, pausePath, DefaultPauseImage, PauseEntrypoint)
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			runPause(t, binary, sig)
		}
	})
	t.Run("workload", func(t *testing.T) {
		binary := checkImage(t, workloadPath, WorkloadImage, WorkloadEntrypoint)
		runWorkload(t, binary)
	})
	t.Run("reproducible", func(t *testing.T) {
		again := filepath.Join(dir, "pause-again.tar")
		if err := WritePause(ctx, DefaultPauseImage, again); err != nil {
			t.Fatal(err)
		}
		if a, b := imageDigest(t, pausePath), imageDigest(t, again); a != b {
			t.Fatalf("two builds of the pause image differ: %s and %s", a, b)
		}
	})
	t.Run("other pause reference", func(t *testing.T) {
		path := filepath.Join(dir, "pause-other.tar")
		ref := "registry.k8s.io/pause:3.10"
		if err := WritePause(ctx, ref, path); err != nil {
			t.Fatal(err)
		}
		checkImage(t, path, ref, PauseEntrypoint)
	})
	t.Run("bad reference", func(t *testing.T) {
		if err := WritePause(ctx, "Not A Reference", filepath.Join(dir, "bad.tar")); err == nil {
			t.Fatal("WritePause accepted an invalid reference")
		}
	})
}

// checkImage asserts the tarball at path holds one image tagged ref that runs
// entrypoint on linux on this architecture, and returns the path of the binary
// extracted from its only layer.
func checkImage(t *testing.T, path, ref, entrypoint string) string {
	t.Helper()
	manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if len(manifest) != 1 || len(manifest[0].RepoTags) != 1 || manifest[0].RepoTags[0] != tag.String() {
		t.Fatalf("manifest.json %+v: want one image tagged %s", manifest, tag)
	}
	image, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatalf("the image tagged %s: %v", tag, err)
	}
	cfg, err := image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cfg.OS, cfg.Architecture, runtime.GOARCH)
	}
	if len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != entrypoint {
		t.Errorf("entrypoint %q, want [%s]", cfg.Config.Entrypoint, entrypoint)
	}
	if !cfg.Created.Equal(created) {
		t.Errorf("created %s, want the fixed %s", cfg.Created, created)
	}
	layers, err := image.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	if hdr.Name != strings.TrimPrefix(entrypoint, "/") || hdr.Typeflag != tar.TypeReg || hdr.Mode != 0o755 ||
		hdr.Uid != 0 || hdr.Gid != 0 || !hdr.ModTime.Equal(created) {
		t.Fatalf("layer entry %s type %c mode %o owner %d:%d time %s: want %s, a 0755 root-owned file at the fixed time",
			hdr.Name, hdr.Typeflag, hdr.Mode, hdr.Uid, hdr.Gid, hdr.ModTime, entrypoint)
	}
	binary, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(binary, []byte("\x7fELF")) {
		t.Fatalf("%s is not an ELF binary", entrypoint)
	}
	if next, err := tr.Next(); err != io.EOF {
		t.Fatalf("a second layer entry %v (%v): want only %s", next, err, entrypoint)
	}
	out := filepath.Join(t.TempDir(), filepath.Base(entrypoint))
	if err := os.WriteFile(out, binary, os.FileMode(hdr.Mode)); err != nil {
		t.Fatal(err)
	}
	return out
}

// runPause starts the pause binary, waits until it handles sig, sends it, and
// expects exit status 0.
func runPause(t *testing.T, binary string, sig syscall.Signal) {
	t.Helper()
	cmd := exec.Command(binary)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // gone with the test
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	// The Go runtime handles SIGTERM from its start, and dies of it until
	// signal.Notify: wait for the line pause writes after Notify.
	ready, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil || !strings.Contains(ready, "waiting for SIGTERM") {
		t.Fatalf("pause's first line %q (%v), want it waiting for SIGTERM", ready, err)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	if err := waitExit(cmd); err != nil {
		t.Fatalf("pause after %s: %v, want exit status 0", sig, err)
	}
}

// runWorkload starts the workload binary on a free port and checks its start line,
// its answer, its request log line and its exit on SIGTERM.
func runWorkload(t *testing.T, binary string) {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(binary)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // gone with the test
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
	}()
	expectLine(t, lines, "workload started")

	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if want := "capk3s workload on " + hostname + "\n"; resp.StatusCode != http.StatusOK || string(body) != want {
		t.Fatalf("GET /: %d %q, want 200 %q", resp.StatusCode, body, want)
	}
	expectLine(t, lines, "GET / from 127.0.0.1:")

	resp, err = http.Get(fmt.Sprintf("http://127.0.0.1:%d/elsewhere", port))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /elsewhere: %d, want 404", resp.StatusCode)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	expectLine(t, lines, "workload stopped")
	if err := waitExit(cmd); err != nil {
		t.Fatalf("workload after SIGTERM: %v, want exit status 0", err)
	}
}

func waitExit(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done //nolint:errcheck // the run already failed: it did not exit
		return fmt.Errorf("still running after 10s")
	}
}

func expectLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("stdout ended without a line containing %q", want)
			}
			if strings.Contains(line, want) {
				return
			}
		case <-timeout:
			t.Fatalf("no line containing %q on stdout", want)
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}

func imageDigest(t *testing.T, path string) v1.Hash {
	t.Helper()
	image, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := image.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return digest
}
