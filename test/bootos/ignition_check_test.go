package bootos

import (
	"slices"
	"strings"
	"testing"

	"github.com/coreos/go-systemd/v22/unit"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// Where Ignition enables units: a preset file that systemd applies on the first
// boot (internal/exec/util/unit.go, Ignition v2.24.0).
const ignitionPresets = "/etc/systemd/system-preset/20-ignition.preset"

// checkIgnited: both Ignition stages finished, the bootstrap unit ran and the
// machine reports bootstrapped.
func checkIgnited(t *testing.T, m *machine) {
	t.Helper()
	if got, want := m.lines("/var/log/capk3s/stage-exits"), []string{"fetch-offline: exit 0", "files: exit 0"}; !slices.Equal(got, want) {
		t.Errorf("Ignition stages: %v, want %v", got, want)
	}
	if n := strings.Count(m.read("/var/log/capk3s/ignition.log"), "Ignition finished successfully"); n != 2 {
		t.Errorf("Ignition reported success %d times, want once per stage", n)
	}
	checkUnit(t, m, "capk3s-bootstrap.service")
	if !slices.Contains(m.lines("/var/log/capk3s/units"), "capk3s-bootstrap.service: exit 0") {
		t.Errorf("the bootstrap unit did not succeed: %v", m.lines("/var/log/capk3s/units"))
	}
	if got := m.read(sentinel); got != "success\n" {
		t.Errorf("sentinel = %q, want success", got)
	}
	if got, ok := m.stat(failed); ok {
		t.Errorf("failure marker: %q", got.content)
	}
}

// checkUnit: Ignition wrote the unit (when it has contents of its own) and enabled it.
func checkUnit(t *testing.T, m *machine, name string) {
	t.Helper()
	if !slices.Contains(m.lines(ignitionPresets), "enable "+name) {
		t.Errorf("%s is not enabled; presets:\n%s", name, m.read(ignitionPresets))
	}
}

// checkIgnitionOSSetup: users as with cloud-init (Ignition writes SSH keys to a
// fragment of its own); boot commands in their unit, run before the bootstrap;
// timesyncd's servers; mount units. Disks are not checked: the disks stage
// partitions and formats block devices, and there are none here.
func checkIgnitionOSSetup(t *testing.T, m *machine, spec bootstrapv1.KThreesConfigSpec) {
	t.Helper()
	checkUsers(t, m, spec, ".ssh/authorized_keys.d/ignition")
	if len(spec.BootCommands) > 0 {
		checkUnit(t, m, "capk3s-bootcmd.service")
		if units := m.lines("/var/log/capk3s/units"); len(units) == 0 || units[0] != "capk3s-bootcmd.service: exit 0" {
			t.Errorf("the boot commands' unit did not run first: %v", units)
		}
	}
	if spec.NTP != nil {
		checkUnit(t, m, "systemd-timesyncd.service")
		conf := m.read("/etc/systemd/timesyncd.conf.d/capk3s-ntp.conf")
		if want := "NTP=" + strings.Join(spec.NTP.Servers, " ") + "\n"; !strings.Contains(conf, want) {
			t.Errorf("timesyncd drop-in = %q, want %q", conf, want)
		}
	}
	for _, mp := range spec.Mounts {
		name := unit.UnitNamePathEscape(mp[1]) + ".mount"
		checkUnit(t, m, name)
		u := m.read("/etc/systemd/system/" + name)
		// systemd takes no LABEL=: the unit names the label's device link.
		what := mp[0]
		if l, ok := strings.CutPrefix(what, "LABEL="); ok {
			what = "/dev/disk/by-label/" + l
		}
		if !strings.Contains(u, "What="+what+"\n") || !strings.Contains(u, "Where="+mp[1]+"\n") {
			t.Errorf("%s:\n%s", name, u)
		}
	}
}
