package cloudinit

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// checkLines are the check entry's calls (after its header and functions).
func checkLines(check string) []string {
	var out []string
	for l := range strings.SplitSeq(check, "\n") {
		if strings.HasPrefix(l, "capk3s_file '") || strings.HasPrefix(l, "capk3s_user '") || strings.HasPrefix(l, "capk3s_group '") {
			out = append(out, l)
		}
	}
	return out
}

// TestRenderChecksWhatCloudInitApplied: a write_files entry or a user that
// cloud-init fails on does not stop the boot, so before the user's first command
// runcmd checks every file (owner as asked, by name or by ID, mode, digest of
// the decoded content) and every user; a mismatch ends the script before the
// install and the success sentinel.
func TestRenderChecksWhatCloudInitApplied(t *testing.T) {
	in := ownersInput()
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write([]byte("unzipped\n"))
	_ = w.Close()
	in.Files = append(in.Files,
		File{Path: "/opt/b64", Encoding: bootstrapv1.Base64, Content: base64.StdEncoding.EncodeToString([]byte("decoded")), Permissions: "4750"},
		File{Path: "/opt/gz", Encoding: bootstrapv1.Gzip, Content: gz.String()},
		File{Path: "/opt/gzb64", Encoding: bootstrapv1.GzipBase64, Content: base64.StdEncoding.EncodeToString(gz.Bytes()), Owner: "007:none"},
		File{Path: "/opt/not-gzip", Encoding: bootstrapv1.Gzip, Content: "plain"},
	)
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	p := parse(t, out)
	lines := checkLines(p.Check)
	k3sConfig := ""
	for _, f := range p.WriteFiles {
		if f.Path == k3sConfigPath {
			k3sConfig = f.Content
		}
	}
	want := []string{
		"capk3s_file '/etc/rancher/k3s/config.yaml' '%U %G %a' 'root root 600' '" + sha(k3sConfig) + "'",
		"capk3s_file '/home/ops/.profile' '%U %a' 'ops 644' '" + sha("a") + "'",
		"capk3s_file '/etc/ops-dir/conf' '%U %G %a' 'ops ops 644' '" + sha("b") + "'",
		"capk3s_file '/etc/docker-group' '%U %G %a' 'root docker 644' '" + sha("c") + "'",
		"capk3s_file '/etc/primary-group' '%U %G %a' 'nobody opsteam 644' '" + sha("d") + "'",
		"capk3s_file '/opt/image-user' '%U %G %a' 'nobody nogroup 644' '" + sha("e") + "'",
		"capk3s_file '/opt/root' '%U %a' 'root 644' '" + sha("f") + "'",
		// Numeric owners are checked by ID, after the chowns.
		"capk3s_file '/opt/uid' '%u %g %a' '1000 1000 600' '" + sha("g") + "'",
		"capk3s_file '/opt/zero' '%u %g %a' '0 0 644' '" + sha("h") + "'",
		"capk3s_file '/opt/uid-and-name' '%u %G %a' '1001 ops 644' '" + sha("i") + "'",
		"capk3s_file '/opt/group-id' '%g %a' '1002 644' '" + sha("j") + "'",
		`capk3s_file '/opt/it'\''s' '%u %a' '1003 644' '` + sha("k") + "'",
		"capk3s_file '/opt/b64' '%U %G %a' 'root root 4750' '" + sha("decoded") + "'",
		"capk3s_file '/opt/gz' '%U %G %a' 'root root 644' '" + sha("unzipped\n") + "'",
		// A part that leaves the ID alone is not checked; IDs lose leading zeros.
		"capk3s_file '/opt/gzb64' '%u %a' '7 644' '" + sha("unzipped\n") + "'",
		// Content cloud-init cannot decode is not written at all: no digest to check.
		"capk3s_file '/opt/not-gzip' '%U %G %a' 'root root 644' ''",
		"capk3s_user 'ops' 'opsteam'",
		"capk3s_group 'ops' 'wheel'",
		"capk3s_group 'ops' 'docker'",
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("check lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	// A failure is said on stderr, kept in the marker file, and ends the script.
	for _, s := range []string{">&2", "> " + FailureMarkerPath, "exit 1"} {
		if !strings.Contains(p.Check, s) {
			t.Errorf("check has no %q:\n%s", s, p.Check)
		}
	}
	// Ignition writes files and users before the system starts, and fails the boot
	// itself: its bootstrap script has no check.
	ign, err := Render(asIgnition(in))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(ign, []byte("capk3s_file")) {
		t.Error("the Ignition config carries the cloud-init check")
	}
}

// TestRenderCreatesPrimaryGroupsFirst: cloud-init creates a user's missing groups
// only when the user lists groups; with a primary_group alone, useradd --gid
// fails on a group that does not exist and the user is never created. The
// primary groups go into the top-level groups key, created before the users.
func TestRenderCreatesPrimaryGroupsFirst(t *testing.T) {
	in := minimal(Agent)
	in.Spec.Users = []bootstrapv1.User{
		{Name: "ops", PrimaryGroup: "opsteam"},
		{Name: "dev", PrimaryGroup: " opsteam ", Groups: "docker"},
		{Name: "plain"},
	}
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	p := parse(t, out)
	if !reflect.DeepEqual(p.Groups, []string{"opsteam"}) {
		t.Errorf("groups = %q, want [opsteam]", p.Groups)
	}
	m := rawCloudConfig(t, out)
	if _, ok := m["groups"]; !ok {
		t.Error("no top-level groups key")
	}
	in.Spec.Users = []bootstrapv1.User{{Name: "plain"}}
	out, err = Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rawCloudConfig(t, out)["groups"]; ok {
		t.Error("a groups key without primary groups")
	}
}

// TestRenderRestoresSetuidAfterCloudInit: cloud-init's write_files sets the mode
// and then the owner, and the kernel clears setuid and setgid on chown, so such
// a file landed 0750 instead of 4750 (both Debian cloud-inits, test/bootos). A
// chmod after the chowns sets the bits again.
func TestRenderRestoresSetuidAfterCloudInit(t *testing.T) {
	in := minimal(Agent)
	in.Files = []File{
		{Path: "/opt/suid", Permissions: "4750", Content: "a"},
		{Path: "/opt/sgid", Owner: "1000:1000", Permissions: "2755", Content: "b"},
		{Path: "/opt/sticky", Permissions: "1777", Content: "c"},
		{Path: "/opt/plain", Permissions: "0755", Content: "d"},
	}
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	p := parse(t, out)
	want := []string{"chmod '4750' '/opt/suid' || exit 1", "chmod '2755' '/opt/sgid' || exit 1"}
	if !reflect.DeepEqual(p.Chmods, want) {
		t.Errorf("chmods = %q, want %q", p.Chmods, want)
	}
}
