package cloudinit

import (
	"strings"
	"testing"
)

// TestIgnitionSetsSpecialModesInTheScript: Ignition configs of spec 3.4 cannot
// carry setuid, setgid or sticky bits (Ignition v2.24.0 masks them off when it
// reads the config, and the file lands 0750 for 4750; found by test/bootos), so
// the bootstrap script sets them before the user's first command, and stops if it
// cannot.
func TestIgnitionSetsSpecialModesInTheScript(t *testing.T) {
	in := asIgnition(minimal(Agent))
	in.Spec.PreK3sCommands = []string{"echo first"}
	in.Files = []File{
		{Path: "/usr/local/bin/su-tool", Content: "x", Permissions: "4750"},
		{Path: "/usr/local/bin/sg-tool", Content: "x", Permissions: "2755"},
		{Path: "/srv/shared", Content: "x", Permissions: "1644"},
		{Path: "/etc/plain", Content: "x", Permissions: "0640"},
	}
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	script := parseIgnition(t, out).script
	want := "#!/bin/sh\n" +
		"chmod '4750' '/usr/local/bin/su-tool' || exit 1\n" +
		"chmod '2755' '/usr/local/bin/sg-tool' || exit 1\n" +
		"chmod '1644' '/srv/shared' || exit 1\n" +
		"echo first\n"
	if !strings.HasPrefix(script, want) {
		t.Errorf("bootstrap script:\n%s\nwant it to start with:\n%s", script, want)
	}
}
