package bootos

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/capk3s/capk3s/internal/cloudinit"
)

// suites are the Debian releases booted, with the cloud-init each carries.
var suites = []struct{ name, cloudInit string }{
	{"bookworm", "22.4"},
	{"trixie", "25.1"},
}

func rootsDir() string {
	if d := os.Getenv("CAPK3S_ROOTS"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "capk3s", "roots")
}

var (
	rootsOnce sync.Once
	rootsErr  error
)

// requireRoots builds the cached roots once if they are missing, and skips a
// test where they cannot run.
func requireRoots(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("booting in a throwaway root needs Linux and root (mounts, namespaces)")
	}
	rootsOnce.Do(func() {
		args := []string{"../../hack/bootos/build-roots.sh"}
		for _, s := range suites {
			args = append(args, s.name)
		}
		cmd := exec.Command("sh", args...)
		cmd.Env = append(os.Environ(), "CAPK3S_ROOTS="+rootsDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			rootsErr = errors.New(string(out) + err.Error())
		}
	})
	if rootsErr != nil {
		t.Fatalf("building the Debian roots: %v", rootsErr)
	}
}

// machine is one booted root: the cached root as the lower layer, and what the
// boot changed in upper.
type machine struct {
	t            *testing.T
	lower, upper string
}

// bootEverySuite renders in and boots it on every Debian root, each in its own
// parallel subtest <name>/<suite>, and runs check on what landed; a failed check
// logs the machine's diagnostics.
func bootEverySuite(t *testing.T, name string, in cloudinit.Input, check func(t *testing.T, m *machine)) {
	t.Helper()
	userData, err := cloudinit.Render(in)
	if err != nil {
		t.Fatalf("%s: render: %v", name, err)
	}
	for _, s := range suites {
		t.Run(name+"/"+s.name, func(t *testing.T) {
			t.Parallel()
			m := boot(t, s.name, userData)
			defer func() {
				if t.Failed() {
					t.Log(m.diagnostics())
				}
			}()
			check(t, m)
		})
	}
}

// checkFailureReported: the bootstrap reported failure as capk3s's check does
// (internal/cloudinit/cloudconfig_check.go): no sentinel, the marker and cloud-init's
// output log give reason, cloud-init's status says runcmd failed, and no call that
// notAfter accepts was made.
func checkFailureReported(t *testing.T, m *machine, reason string, notAfter func(call string) bool) {
	t.Helper()
	if got, ok := m.stat(sentinel); ok {
		t.Errorf("the sentinel was written (%q): Cluster API would call the machine bootstrapped", got.content)
	}
	if got := m.read(failed); !strings.HasPrefix(got, reason) {
		t.Errorf("failure marker = %q, want it to start with %q", got, reason)
	}
	if out := m.read("/var/log/capk3s/cloud-init-output.log"); !strings.Contains(out, "capk3s: bootstrap failed: "+reason) {
		t.Errorf("cloud-init's output log does not say why:\n%s", out)
	}
	for _, call := range m.calls() {
		if notAfter(call) {
			t.Errorf("ran %q after the bootstrap failed", call)
		}
	}
	if st := m.read("/var/log/capk3s/status"); !strings.Contains(st, "status: error") || !strings.Contains(st, "scripts-user") {
		t.Errorf("cloud-init status does not report the failed runcmd:\n%s", st)
	}
}

// boot boots userData in a fresh overlay of suite's root.
func boot(t *testing.T, suite string, userData []byte) *machine {
	t.Helper()
	dir := newSeed(t, "user-data", userData)
	return enter(t, suite, dir, "sh /seed/boot.sh", "chroot")
}

// newSeed is a test directory whose seed holds the boot scripts, the stand-ins
// and the bootstrap data under name.
func newSeed(t *testing.T, name string, data []byte) string {
	t.Helper()
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed")
	if err := os.MkdirAll(filepath.Join(seed, "standins"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"boot.sh", "ignite.sh", "firstboot.sh"} {
		copyFile(t, filepath.Join("testdata", s), filepath.Join(seed, s))
	}
	entries, err := os.ReadDir("testdata/standins")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		copyFile(t, filepath.Join("testdata/standins", e.Name()), filepath.Join(seed, "standins", e.Name()))
	}
	if err := os.WriteFile(filepath.Join(seed, name), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// enter runs cmd in a fresh overlay of suite's root (enter.sh, in mode chroot or
// host) and returns the machine it left.
func enter(t *testing.T, suite, dir, cmd, mode string) *machine {
	t.Helper()
	lower := filepath.Join(rootsDir(), suite)
	out, err := exec.Command("sh", "testdata/enter.sh", lower, dir, cmd, mode).CombinedOutput()
	if err != nil {
		t.Fatalf("boot in %s: %v\n%s", suite, err, out)
	}
	return &machine{t: t, lower: lower, upper: filepath.Join(dir, "upper")}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// layer is where the machine's path p lives: the upper layer if the boot wrote
// or removed it, else the cached root.
func (m *machine) layer(p string) (string, bool) {
	up := filepath.Join(m.upper, p)
	if fi, err := os.Lstat(up); err == nil {
		if fi.Mode()&fs.ModeCharDevice != 0 {
			return "", false // an overlay whiteout: removed
		}
		return up, true
	}
	low := filepath.Join(m.lower, p)
	_, err := os.Lstat(low)
	return low, err == nil
}

// stat is a file's mode bits (with setuid/setgid/sticky), owner IDs and content.
type stat struct {
	mode     os.FileMode
	uid, gid int
	content  []byte
}

func (m *machine) stat(p string) (stat, bool) {
	m.t.Helper()
	real, ok := m.layer(p)
	if !ok {
		return stat{}, false
	}
	fi, err := os.Lstat(real)
	if err != nil {
		m.t.Fatal(err)
	}
	sys := fi.Sys().(*syscall.Stat_t)
	s := stat{mode: fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky), uid: int(sys.Uid), gid: int(sys.Gid)}
	if fi.Mode().IsRegular() {
		if s.content, err = os.ReadFile(real); err != nil {
			m.t.Fatal(err)
		}
	}
	return s, true
}

// read is a file's content, "" when it does not exist.
func (m *machine) read(p string) string {
	s, _ := m.stat(p)
	return string(s.content)
}

// lines are the non-empty lines of a file.
func (m *machine) lines(p string) []string {
	var out []string
	for l := range strings.SplitSeq(m.read(p), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// entries are /etc/passwd or /etc/group as name -> fields.
func (m *machine) entries(p string) map[string][]string {
	out := map[string][]string{}
	for _, l := range m.lines(p) {
		f := strings.Split(l, ":")
		out[f[0]] = f
	}
	return out
}

// calls is the stand-ins' and the user commands' shared log, in order.
func (m *machine) calls() []string { return m.lines("/var/log/capk3s/calls") }

// diagnostics is what to print when an assertion on the boot fails.
func (m *machine) diagnostics() string {
	var b bytes.Buffer
	for _, p := range []string{"stage-exits", "status", "schema", "calls", "cloud-init-output.log", "ignition.log", "units", "units.log"} {
		b.WriteString("### " + p + "\n" + m.read("/var/log/capk3s/"+p) + "\n")
	}
	for _, l := range m.lines("/var/log/capk3s/cloud-init.log") {
		if strings.Contains(l, "WARNING") || strings.Contains(l, "ERROR") || strings.Contains(l, "Traceback") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}
