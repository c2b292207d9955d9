package cloudinit

import "testing"

// Content read from a Secret stays owner-only on the machine unless the user says
// otherwise; other files keep the usual 0644. Both formats carry the same modes.
func TestFilesFromSecretsDefaultTo0600(t *testing.T) {
	in := minimal(Agent)
	in.Files = []File{
		{Path: "/etc/app/password", Content: "hunter2\n", FromSecret: true},
		{Path: "/etc/app/shared.conf", Content: "a: b\n", FromSecret: true, Permissions: "0644"},
		{Path: "/etc/app/group.conf", Content: "c: d\n", FromSecret: true, Permissions: "640"},
		{Path: "/etc/motd", Content: "welcome\n"},
	}
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	p := parse(t, out)
	for path, want := range map[string]string{
		"/etc/app/password":    "0600",
		"/etc/app/shared.conf": "0644",
		"/etc/app/group.conf":  "640",
		"/etc/motd":            "0644",
	} {
		if got := p.file(t, path).Permissions; got != want {
			t.Errorf("%s: permissions %q, want %q", path, got, want)
		}
	}
	if got := checkSameAsCloudConfig(t, in).file(t, "/etc/app/password").mode; got != 0o600 {
		t.Errorf("Ignition writes /etc/app/password with mode %o, want 600", got)
	}
}
