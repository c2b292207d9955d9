package bootos

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
)

// ignitionSuite is the root an Ignition machine is applied to. Ignition's images
// (Flatcar, Fedora CoreOS) cannot be built here; a Debian root gives Ignition what
// it touches (passwd, group, shadow, systemd's directories), and Ignition runs
// outside it, as from the initramfs, so one release is enough.
const ignitionSuite = "trixie"

func ignitionBinary() string {
	dir := os.Getenv("CAPK3S_TOOLS_DIR")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "capk3s", "bin")
	}
	return filepath.Join(dir, "ignition")
}

var (
	ignitionOnce sync.Once
	ignitionErr  error
)

// requireIgnition builds Ignition once if it is missing (hack/ensure-tools.sh:
// from the module proxy, cgo against libblkid).
func requireIgnition(t *testing.T) string {
	t.Helper()
	requireRoots(t)
	ignitionOnce.Do(func() {
		out, err := exec.Command("bash", "../../hack/ensure-tools.sh", "ignition").CombinedOutput()
		if err != nil {
			ignitionErr = errors.New(string(out) + err.Error())
		}
	})
	if ignitionErr != nil {
		t.Fatalf("building Ignition: %v", ignitionErr)
	}
	return ignitionBinary()
}

// ignite applies an Ignition config to a fresh overlay of the root as a first boot
// does (testdata/ignite.sh), then runs what systemd would start. imageGroups are
// created first, as groups the image ships.
func ignite(t *testing.T, ign string, config []byte, imageGroups []string) *machine {
	t.Helper()
	dir := newSeed(t, "config.ign", config)
	// Ignition writes users' SSH keys as the user, from outside the root: the path
	// down to the root must be open to them (test directories are 0700).
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if len(imageGroups) > 0 {
		if err := os.WriteFile(filepath.Join(dir, "seed", "image-groups"), []byte(strings.Join(imageGroups, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return enter(t, ignitionSuite, dir, "sh "+dir+"/seed/ignite.sh "+ign+" "+dir, "host")
}

// ignitionFragment is the Ignition counterpart of a case's cloud-config fragment
// (spec.additionalUserData): one file, which ignitionFragmentFile checks landed.
const (
	ignitionFragment = `{"ignition":{"version":"3.3.0"},"storage":{"files":[{"path":"/etc/capk3s-test/fragment",` +
		`"mode":420,"contents":{"source":"data:,capk3s%20fragment%20applied%0A"}}]}}`
	ignitionFragmentFile = "/etc/capk3s-test/fragment"
)

// asIgnition is c's KThreesConfig with format ignition, without what Ignition has
// no equivalent for (the webhook and the renderer refuse those): sudo rules and
// disabled accounts; a cloud-config fragment becomes ignitionFragment.
func asIgnition(in cloudinit.Input) cloudinit.Input {
	in.Spec.Format = bootstrapv1.Ignition
	if in.Spec.AdditionalUserData.CloudConfig != "" {
		in.Spec.AdditionalUserData = bootstrapv1.AdditionalUserData{Ignition: ignitionFragment}
	}
	users := make([]bootstrapv1.User, 0, len(in.Spec.Users))
	for _, u := range in.Spec.Users {
		u.Sudo, u.Inactive = "", nil
		users = append(users, u)
	}
	in.Spec.Users = users
	return in
}

// missingGroups are the groups spec's users name (primary and others) that the
// root lacks. Ignition's useradd fails on them and Ignition cannot create a group
// only when it is missing (passwd.groups fails on an existing one), so with
// Ignition they must come with the image.
func missingGroups(t *testing.T, spec bootstrapv1.KThreesConfigSpec) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(rootsDir(), ignitionSuite, "etc/group"))
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for l := range strings.SplitSeq(string(b), "\n") {
		name, _, _ := strings.Cut(l, ":")
		have[name] = true
	}
	var out []string
	for _, u := range spec.Users {
		for _, g := range append(strings.Split(u.Groups, ","), u.PrimaryGroup) {
			if g = strings.TrimSpace(g); g != "" && !have[g] {
				have[g] = true
				out = append(out, g)
			}
		}
	}
	return out
}

// TestIgnitionAppliesRenderedData applies each case's Ignition config with the
// real Ignition and checks what landed.
func TestIgnitionAppliesRenderedData(t *testing.T) {
	ign := requireIgnition(t)
	for _, c := range cases() {
		in := asIgnition(c.in)
		config, err := cloudinit.Render(in)
		if err != nil {
			t.Fatalf("%s: render: %v", c.name, err)
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := ignite(t, ign, config, missingGroups(t, in.Spec))
			defer func() {
				if t.Failed() {
					t.Log(m.diagnostics())
				}
			}()
			checkIgnited(t, m)
			checkFiles(t, m, in)
			checkK3sConfig(t, m, c.k3sConfig)
			checkK3sWouldStart(t, m)
			checkIgnitionOSSetup(t, m, in.Spec)
			checkCalls(t, m, c.calls)
			if in.Spec.AdditionalUserData.Ignition != "" {
				if got := m.read(ignitionFragmentFile); got != "capk3s fragment applied\n" {
					t.Errorf("%s = %q: Ignition did not apply the user's fragment", ignitionFragmentFile, got)
				}
			}
		})
	}
}

// TestIgnitionFailureIsReported: data Ignition cannot apply fails the boot in the
// initramfs (emergency.target), so the bootstrap unit never runs: no k3s, no
// sentinel. The same cases as cloud-init's.
func TestIgnitionFailureIsReported(t *testing.T) {
	ign := requireIgnition(t)
	agent := func() cloudinit.Input {
		return asIgnition(cloudinit.Input{Role: cloudinit.Agent, Version: version, Token: agentTok, ServerURL: serverURL,
			Spec: bootstrapv1.KThreesConfigSpec{PreK3sCommands: []string{"echo pre >> /var/log/capk3s/calls"}}})
	}
	unwritable := agent()
	unwritable.Files = []cloudinit.File{{Path: "/etc/capk3s-test/orphan", Owner: "capk3s-nobody:capk3s-nogroup", Content: "x\n"}}
	badUser := agent()
	badUser.Spec.Users = []bootstrapv1.User{{Name: "ops", HomeDir: "relative/home"}}
	for _, c := range []struct {
		name   string
		in     cloudinit.Input
		reason string
	}{
		{"file-not-written", unwritable, `capk3s-nobody`},
		{"user-not-created", badUser, `creating or modifying user "ops"`},
	} {
		config, err := cloudinit.Render(c.in)
		if err != nil {
			t.Fatalf("%s: render: %v", c.name, err)
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := ignite(t, ign, config, nil)
			defer func() {
				if t.Failed() {
					t.Log(m.diagnostics())
				}
			}()
			if got := m.lines("/var/log/capk3s/stage-exits"); len(got) != 2 || got[1] == "files: exit 0" {
				t.Errorf("Ignition stages: %v, want files to fail", got)
			}
			log := m.read("/var/log/capk3s/ignition.log")
			if !strings.Contains(log, "CRITICAL") || !strings.Contains(log, c.reason) {
				t.Errorf("Ignition's log does not say %q", c.reason)
			}
			if got, ok := m.stat(sentinel); ok {
				t.Errorf("the sentinel was written (%q)", got.content)
			}
			if calls := m.calls(); len(calls) > 0 {
				t.Errorf("ran %v after Ignition failed", calls)
			}
		})
	}
}
