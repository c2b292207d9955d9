package cloudinit

import (
	"bytes"
	"path"
	"strconv"
	"strings"
	"testing"

	ign "github.com/coreos/ignition/v2/config/v3_4"
	igntypes "github.com/coreos/ignition/v2/config/v3_4/types"
	"github.com/vincent-petithory/dataurl"
)

// ignFile is one Ignition file as the machine ends up with it.
type ignFile struct {
	path, user, group string
	mode              int
	content           []byte
}

// ignParsed is an Ignition config read back with the Ignition library.
type ignParsed struct {
	files  []ignFile
	units  []igntypes.Unit
	script string
	// bootScript is the bootCommands script, ntp the timesyncd drop-in: the OS
	// setup's own files, kept apart from the plan's files.
	bootScript, ntp string
	cfg             igntypes.Config
}

// parseIgnition parses out as Ignition does, decodes every file, and separates
// the bootstrap script from the plan's files.
func parseIgnition(t testing.TB, out []byte) ignParsed {
	t.Helper()
	cfg, rpt, err := ign.Parse(out)
	if err != nil {
		t.Fatalf("Ignition refuses the config: %v: %s\n%s", err, rpt.String(), out)
	}
	if cfg.Ignition.Version != "3.4.0" {
		t.Fatalf("ignition.version = %q, want 3.4.0", cfg.Ignition.Version)
	}
	p := ignParsed{units: cfg.Systemd.Units, cfg: cfg}
	for _, f := range cfg.Storage.Files {
		if f.Overwrite == nil || !*f.Overwrite {
			t.Errorf("%s: overwrite is not true, so Ignition would fail on an existing file", f.Path)
		}
		if f.Mode == nil || f.Contents.Source == nil {
			t.Fatalf("%s: no mode or no contents", f.Path)
		}
		du, err := dataurl.DecodeString(*f.Contents.Source)
		if err != nil {
			t.Fatalf("%s: contents are not a data URL: %v", f.Path, err)
		}
		content := du.Data
		if c := f.Contents.Compression; c != nil && *c != "" {
			if *c != "gzip" {
				t.Fatalf("%s: compression %q", f.Path, *c)
			}
			content = mustGunzip(t, content)
		}
		got := ignFile{path: f.Path, mode: *f.Mode, content: content}
		if f.User.Name != nil {
			got.user = *f.User.Name
		} else if f.User.ID != nil {
			got.user = strconv.Itoa(*f.User.ID)
		}
		if f.Group.Name != nil {
			got.group = *f.Group.Name
		} else if f.Group.ID != nil {
			got.group = strconv.Itoa(*f.Group.ID)
		}
		if f.Path == bootstrapScriptPath {
			if got.mode != 0o700 {
				t.Errorf("bootstrap script mode = %o, want 700", got.mode)
			}
			p.script = string(content)
			continue
		}
		switch f.Path {
		case bootCommandsScriptPath:
			p.bootScript = string(content)
			continue
		case timesyncdDropInPath:
			p.ntp = string(content)
			continue
		}
		p.files = append(p.files, got)
	}
	if p.script == "" {
		t.Fatalf("no bootstrap script %s", bootstrapScriptPath)
	}
	checkBootstrapUnit(t, p.units)
	return p
}

// checkBootstrapUnit checks that the first unit is the bootstrap unit, enabled,
// running the script after the network is up (the OS setup's units follow it).
func checkBootstrapUnit(t testing.TB, units []igntypes.Unit) {
	t.Helper()
	if len(units) == 0 || units[0].Name != "capk3s-bootstrap.service" {
		t.Fatalf("units = %+v, want capk3s-bootstrap.service first", units)
	}
	u := units[0]
	if u.Enabled == nil || !*u.Enabled || u.Contents == nil {
		t.Fatalf("unit %s is not enabled or has no contents", u.Name)
	}
	for _, line := range []string{"Type=oneshot", "ExecStart=/etc/capk3s/bootstrap.sh", "After=network-online.target", "WantedBy=multi-user.target"} {
		if !strings.Contains(*u.Contents, "\n"+line+"\n") {
			t.Errorf("unit lacks %q:\n%s", line, *u.Contents)
		}
	}
}

// commands are the script's commands: everything after the shebang.
func (p ignParsed) commands(t testing.TB) string {
	t.Helper()
	body, ok := strings.CutPrefix(p.script, "#!/bin/sh\n")
	if !ok {
		t.Fatalf("script does not start with #!/bin/sh:\n%s", p.script)
	}
	return body
}

func (p ignParsed) file(t testing.TB, path string) ignFile {
	t.Helper()
	for _, f := range p.files {
		if f.path == path {
			return f
		}
	}
	t.Fatalf("no Ignition file %s", path)
	return ignFile{}
}

// scriptOf is the script the commands must make: one line each, as cloud-init's
// runcmd script has them.
func scriptOf(cmds []string) string {
	if len(cmds) == 0 {
		return ""
	}
	return strings.Join(cmds, "\n") + "\n"
}

// asIgnition is in, rendered as Ignition.
func asIgnition(in Input) Input {
	in.Spec.Format = "ignition"
	return in
}

// checkSameAsCloudConfig renders in in both formats and checks that the machine
// gets the same files (path, owner, mode, bytes) and runs the same commands:
// the two encoders must carry one plan, not two.
func checkSameAsCloudConfig(t testing.TB, in Input) ignParsed {
	t.Helper()
	in.Spec.Format = ""
	cc, err := Render(in)
	if err != nil {
		t.Fatalf("Render cloud-config: %v", err)
	}
	ignOut, err := Render(asIgnition(in))
	if err != nil {
		t.Fatalf("Render ignition: %v", err)
	}
	c, ig := parse(t, cc), parseIgnition(t, ignOut)
	c.applyChowns(t)
	if len(c.WriteFiles) != len(ig.files) {
		t.Fatalf("%d Ignition files, %d write_files entries", len(ig.files), len(c.WriteFiles))
	}
	for i, w := range c.WriteFiles {
		g := ig.files[i]
		owner := g.user
		if g.group != "" {
			owner += ":" + g.group
		}
		mode, _ := strconv.ParseInt(w.Permissions, 8, 32)
		if g.path != path.Clean(w.Path) || owner != w.Owner || g.mode != int(mode) {
			t.Errorf("file %d: Ignition %s %s %o, cloud-config %s %s %s", i, g.path, owner, g.mode, w.Path, w.Owner, w.Permissions)
		}
		if want := bytesOnDisk(t, w); !bytes.Equal(g.content, want) {
			t.Errorf("%s: Ignition writes %q, cloud-init %q", g.path, g.content, want)
		}
	}
	if got, want := ig.commands(t), scriptOf(c.RunCmd); got != want {
		t.Errorf("script commands = %q\nruncmd gives %q", got, want)
	}
	checkSameOSSetup(t, c, ig)
	return ig
}

// checkSameOSSetup checks that the OS setup reached both formats: the same boot
// commands, users, time servers, file systems and mounts.
func checkSameOSSetup(t testing.TB, c parsed, ig ignParsed) {
	t.Helper()
	if got, want := strings.TrimPrefix(ig.bootScript, "#!/bin/sh\n"), scriptOf(c.BootCmd); got != want {
		t.Errorf("boot commands script = %q, bootcmd gives %q", got, want)
	}
	if len(ig.cfg.Passwd.Users) != len(c.Users) {
		t.Fatalf("%d Ignition users, %d cloud-config users", len(ig.cfg.Passwd.Users), len(c.Users))
	}
	for i, u := range c.Users {
		g := ig.cfg.Passwd.Users[i]
		hash := ""
		if g.PasswordHash != nil {
			hash = *g.PasswordHash
		}
		if g.Name != u.Name || hash != u.Passwd || len(g.SSHAuthorizedKeys) != len(u.SSHAuthorizedKeys) || u.LockPasswd != (hash == "") {
			t.Errorf("user %d: Ignition %+v, cloud-config %+v", i, g, u)
		}
	}
	wantNTP := ""
	if c.NTP != nil && (c.NTP.Enabled == nil || *c.NTP.Enabled) && len(c.NTP.Servers) > 0 {
		wantNTP = "[Time]\nNTP=" + strings.Join(c.NTP.Servers, " ") + "\n"
	}
	if ig.ntp != wantNTP {
		t.Errorf("timesyncd drop-in = %q, want %q", ig.ntp, wantNTP)
	}
	if len(ig.cfg.Storage.Filesystems) != len(c.FSSetup) {
		t.Errorf("%d Ignition file systems, %d fs_setup entries", len(ig.cfg.Storage.Filesystems), len(c.FSSetup))
	}
	mounts := 0
	for _, u := range ig.units {
		if strings.HasSuffix(u.Name, ".mount") {
			mounts++
		}
	}
	if mounts != len(c.Mounts) {
		t.Errorf("%d mount units, %d mounts entries", mounts, len(c.Mounts))
	}
}
