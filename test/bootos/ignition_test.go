package bootos

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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
// does (testdata/ignite.sh), then runs what systemd would start.
func ignite(t *testing.T, ign string, config []byte) *machine {
	t.Helper()
	dir := newSeed(t, "config.ign", config)
	return enter(t, ignitionSuite, dir, "sh "+dir+"/seed/ignite.sh "+ign+" "+dir, "host")
}

// asIgnition is c's KThreesConfig with format ignition, without what Ignition has
// no equivalent for (the webhook and the renderer refuse those): sudo rules and
// disabled accounts.
func asIgnition(in cloudinit.Input) cloudinit.Input {
	in.Spec.Format = bootstrapv1.Ignition
	users := make([]bootstrapv1.User, 0, len(in.Spec.Users))
	for _, u := range in.Spec.Users {
		u.Sudo, u.Inactive = "", nil
		users = append(users, u)
	}
	in.Spec.Users = users
	return in
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
			m := ignite(t, ign, config)
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
		})
	}
}
