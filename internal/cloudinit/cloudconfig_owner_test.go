package cloudinit

import (
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// rawCloudConfig reads rendered cloud-config as plain YAML, so that a test sees
// keys the encoder's own types might not have, and each value's YAML type (a
// number arrives as float64, a string as string).
func rawCloudConfig(t testing.TB, out []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(out, &m); err != nil {
		t.Fatalf("output is not YAML: %v\n%s", err, out)
	}
	return m
}

// rawWriteFiles is write_files by path.
func rawWriteFiles(t testing.TB, m map[string]any) map[string]map[string]any {
	t.Helper()
	files := map[string]map[string]any{}
	list, _ := m["write_files"].([]any)
	for _, e := range list {
		f, _ := e.(map[string]any)
		p, _ := f["path"].(string)
		files[p] = f
	}
	return files
}

func ownersInput() Input {
	in := minimal(Agent)
	in.Spec.PreK3sCommands = []string{"echo pre"}
	in.Spec.Users = []bootstrapv1.User{{Name: "ops", Groups: "wheel, docker", PrimaryGroup: "opsteam"}}
	in.Files = []File{
		{Path: "/home/ops/.profile", Owner: "ops", Content: "a"},
		{Path: "/etc/ops-dir/conf", Owner: "ops:ops", Content: "b"},
		{Path: "/etc/docker-group", Owner: "root:docker", Content: "c"},
		{Path: "/etc/primary-group", Owner: "nobody:opsteam", Content: "d"},
		{Path: "/opt/image-user", Owner: "nobody:nogroup", Content: "e"},
		{Path: "/opt/root", Owner: "root", Content: "f"},
		{Path: "/opt/uid", Owner: "1000:1000", Permissions: "0600", Content: "g"},
		{Path: "/opt/zero", Owner: "0:0", Content: "h"},
		{Path: "/opt/uid-and-name", Owner: "1001:ops", Content: "i"},
		{Path: "/opt/group-id", Owner: ":1002", Content: "j"},
		{Path: "/opt/it's", Owner: "1003", Content: "k"},
	}
	return in
}

// TestRenderFileOwners: cloud-init's write_files resolves owner names when it
// writes, before users_groups has created spec.users, and cannot take IDs at
// all; either failure loses the file (and on cloud-init 22.4 every file after
// it). Files owned by what spec.users creates are deferred until users exist;
// numeric owners are set by chown before the user's first command.
func TestRenderFileOwners(t *testing.T) {
	out, err := Render(ownersInput())
	if err != nil {
		t.Fatal(err)
	}
	m := rawCloudConfig(t, out)
	files := rawWriteFiles(t, m)
	for p, want := range map[string]struct {
		owner    string
		deferred bool
	}{
		"/home/ops/.profile": {"ops", true},
		"/etc/ops-dir/conf":  {"ops:ops", true},
		"/etc/docker-group":  {"root:docker", true},    // a group of spec.users
		"/etc/primary-group": {"nobody:opsteam", true}, // a primary group of spec.users
		"/opt/image-user":    {"nobody:nogroup", false},
		"/opt/root":          {"root", false},
		"/opt/uid":           {"root:root", false},
		"/opt/zero":          {"root:root", false},
		"/opt/uid-and-name":  {"root:root", false},
		"/opt/group-id":      {"root:root", false},
		"/opt/it's":          {"root:root", false},
		k3sConfigPath:        {"root:root", false},
	} {
		f, ok := files[p]
		if !ok {
			t.Errorf("no write_files entry for %s", p)
			continue
		}
		deferred, _ := f["defer"].(bool)
		if f["owner"] != want.owner || deferred != want.deferred {
			t.Errorf("%s: owner %v, defer %v; want owner %s, defer %v", p, f["owner"], f["defer"], want.owner, want.deferred)
		}
	}
	p := parse(t, out)
	wantRunCmd := []string{
		"chown '1000:1000' '/opt/uid' || exit 1",
		"chown '0:0' '/opt/zero' || exit 1",
		"chown '1001:ops' '/opt/uid-and-name' || exit 1",
		"chown ':1002' '/opt/group-id' || exit 1",
		`chown '1003' '/opt/it'\''s' || exit 1`,
		"echo pre",
		"curl -sfL 'https://get.k3s.io' | INSTALL_K3S_VERSION='v1.35.4+k3s1' sh -s - agent",
		agentSentinel,
	}
	if got := p.RunCmd; !reflect.DeepEqual(got, wantRunCmd) {
		t.Errorf("runcmd = %q\nwant %q", got, wantRunCmd)
	}
	// The permissions are the file's own, whoever owns it.
	if f := files["/opt/uid"]; f["permissions"] != "0600" {
		t.Errorf("/opt/uid permissions = %v", f["permissions"])
	}
}

// Without spec.users nothing creates accounts during boot: a named owner must
// exist in the image, and cloud-init resolves it when it writes the file, as
// early as it always has.
func TestRenderFileOwnersWithoutUsers(t *testing.T) {
	in := minimal(Agent)
	in.Files = []File{{Path: "/home/ops/.profile", Owner: "ops:ops", Content: "a"}}
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	f := rawWriteFiles(t, rawCloudConfig(t, out))["/home/ops/.profile"]
	if f["owner"] != "ops:ops" || f["defer"] != nil {
		t.Errorf("write_files entry = %v, want owner ops:ops, not deferred", f)
	}
}

// An owner part of "-1", "none" or blank leaves that ID as cloud-init's
// write_files would (as the writer, root); chown must not read "1000:" as
// "1000 and its login group".
func TestRenderNumericOwnerKeepsUnsetPart(t *testing.T) {
	in := minimal(Agent)
	in.Files = []File{
		{Path: "/opt/a", Owner: "1000:", Content: "a"},
		{Path: "/opt/b", Owner: "1000:-1", Content: "b"},
		{Path: "/opt/c", Owner: "none:1000", Content: "c"},
	}
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := rawCloudConfig(t, out)["runcmd"].([]any)
	want := []any{"chown '1000' '/opt/a' || exit 1", "chown '1000' '/opt/b' || exit 1", "chown ':1000' '/opt/c' || exit 1"}
	if len(got) < len(want) || !reflect.DeepEqual(got[:len(want)], want) {
		t.Errorf("runcmd = %q, want %q", got, want)
	}
}
