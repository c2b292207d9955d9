package bootos

import (
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
)

const (
	sentinel = "/var/log/capk3s/run/cluster-api/bootstrap-success.complete"
	failed   = "/var/log/capk3s/run/cluster-api/bootstrap-failed"
)

// TestCloudInitBootsRenderedData boots each case's cloud-config with each
// Debian cloud-init and checks what landed.
func TestCloudInitBootsRenderedData(t *testing.T) {
	requireRoots(t)
	for _, c := range cases() {
		bootEverySuite(t, c.name, c.in, func(t *testing.T, m *machine) {
			checkSucceeded(t, m)
			checkFiles(t, m, c.in)
			checkK3sConfig(t, m, c.k3sConfig)
			checkK3sWouldStart(t, m)
			checkOSSetup(t, m, c.in.Spec)
			checkCalls(t, m, c.calls)
			if c.check != nil {
				c.check(t, m)
			}
		})
	}
}

// checkSucceeded: every stage ran clean, the user-data passes cloud-init's own
// schema check, and the machine reports bootstrapped.
func checkSucceeded(t *testing.T, m *machine) {
	t.Helper()
	for _, l := range m.lines("/var/log/capk3s/stage-exits") {
		if !strings.HasSuffix(l, ": exit 0") {
			t.Errorf("stage %s", l)
		}
	}
	if st := m.read("/var/log/capk3s/status"); !strings.Contains(st, "status: done\n") || !strings.HasSuffix(st, "exit 0\n") {
		t.Errorf("cloud-init status:\n%s", st)
	}
	if sc := m.read("/var/log/capk3s/schema"); !strings.Contains(sc, "Valid") || !strings.HasSuffix(sc, "exit 0\n") {
		t.Errorf("cloud-init schema:\n%s", sc)
	}
	if got := m.read(sentinel); got != "success\n" {
		t.Errorf("sentinel = %q, want success", got)
	}
	if got, ok := m.stat(failed); ok {
		t.Errorf("failure marker: %q", got.content)
	}
}

// wantFile is what the machine must hold at a path.
type wantFile struct {
	content  string
	mode     os.FileMode
	uid, gid int
}

// expectedFiles are the certificates and the user's files as the Input asks
// for them: content decoded, defaults applied, owners resolved on the machine.
func expectedFiles(t *testing.T, m *machine, in cloudinit.Input) map[string]wantFile {
	t.Helper()
	users, groups := m.entries("/etc/passwd"), m.entries("/etc/group")
	id := func(name string, table map[string][]string) int {
		if name == "" || name == "-1" {
			return 0 // left as the writer (root) had it
		}
		if n, err := strconv.Atoi(name); err == nil {
			return n
		}
		e, ok := table[name]
		if !ok {
			t.Errorf("no account %q on the machine", name)
			return -1
		}
		n, _ := strconv.Atoi(e[2])
		return n
	}
	out := map[string]wantFile{}
	all := append(slices.Clone(in.Certificates), in.Files...)
	for _, f := range all {
		content := f.Content
		if f.Encoding == bootstrapv1.Base64 || f.Encoding == bootstrapv1.GzipBase64 {
			b, err := base64.StdEncoding.DecodeString(content)
			if err != nil {
				t.Fatal(err)
			}
			content = string(b)
		}
		if f.Encoding == bootstrapv1.Gzip || f.Encoding == bootstrapv1.GzipBase64 {
			r, err := gzip.NewReader(strings.NewReader(content))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(r)
			content = string(b)
		}
		perm := f.Permissions
		switch {
		case strings.HasSuffix(f.Path, ".key"):
			perm = "0600"
		case perm == "" && f.FromSecret:
			perm = "0600"
		case perm == "":
			perm = "0644"
		}
		mode, _ := strconv.ParseUint(perm, 8, 32)
		fm := os.FileMode(mode & 0o777)
		if mode&0o4000 != 0 {
			fm |= os.ModeSetuid
		}
		owner := f.Owner
		if owner == "" {
			owner = "root:root"
		}
		u, g, _ := strings.Cut(owner, ":")
		out[f.Path] = wantFile{content: content, mode: fm, uid: id(u, users), gid: id(g, groups)}
	}
	return out
}

// checkFiles: every file byte for byte, with its mode and owner; capk3s's own
// files root's and 0600.
func checkFiles(t *testing.T, m *machine, in cloudinit.Input) {
	t.Helper()
	for p, want := range expectedFiles(t, m, in) {
		got, ok := m.stat(p)
		switch {
		case !ok:
			t.Errorf("%s was not written", p)
		case string(got.content) != want.content:
			t.Errorf("%s holds %q, want %q", p, got.content, want.content)
		case got.mode != want.mode || got.uid != want.uid || got.gid != want.gid:
			t.Errorf("%s is %v %d:%d, want %v %d:%d", p, got.mode, got.uid, got.gid, want.mode, want.uid, want.gid)
		}
	}
	own := []string{"/etc/rancher/k3s/config.yaml"}
	if in.Spec.AgentConfig.Registries != nil {
		own = append(own, "/etc/rancher/k3s/registries.yaml")
	}
	if in.EtcdS3 != nil {
		own = append(own, "/etc/default/k3s")
	}
	for _, p := range own {
		if got, ok := m.stat(p); !ok || got.mode != 0o600 || got.uid != 0 || got.gid != 0 {
			t.Errorf("%s: %v (written %v), want root's, 0600", p, got.mode, ok)
		}
	}
}

// checkK3sConfig: config.yaml as the install found it holds the asked keys
// (checkK3sWouldStart judges the whole file as k3s would).
func checkK3sConfig(t *testing.T, m *machine, want map[string]any) {
	t.Helper()
	var got map[string]any
	if err := yaml.Unmarshal([]byte(m.read("/var/log/capk3s/k3s-config-at-install.yaml")), &got); err != nil {
		t.Fatalf("config.yaml as the install saw it: %v", err)
	}
	for k, v := range want {
		if !reflect.DeepEqual(got[k], v) {
			t.Errorf("config.yaml %s = %#v, want %#v", k, got[k], v)
		}
	}
}

// checkOSSetup: users, groups, passwords, keys and sudo; time servers; the
// disk_setup and fs_setup calls; fstab.
func checkOSSetup(t *testing.T, m *machine, spec bootstrapv1.KThreesConfigSpec) {
	t.Helper()
	checkUsers(t, m, spec, ".ssh/authorized_keys")
	if spec.NTP != nil {
		conf := m.read("/etc/chrony/chrony.conf")
		for _, s := range spec.NTP.Servers {
			if !strings.Contains(conf, "server "+s) {
				t.Errorf("chrony.conf has no server %s:\n%s", s, conf)
			}
		}
	}
	if d := spec.DiskSetup; d != nil {
		disks := m.read("/var/log/capk3s/disks")
		for _, p := range d.Partitions {
			if !strings.Contains(disks, "mkpart "+p.Device+" table="+p.TableType) {
				t.Errorf("no partitioning of %s recorded:\n%s", p.Device, disks)
			}
		}
		for _, f := range d.Filesystems {
			want := fmt.Sprintf("mkfs device=%s partition=%s filesystem=%s label=%s", f.Device, f.Partition, f.Filesystem, f.Label)
			if !strings.Contains(disks, want) {
				t.Errorf("no %q recorded:\n%s", want, disks)
			}
		}
	}
	fstab := m.lines("/etc/fstab")
	for _, mp := range spec.Mounts {
		found := false
		for _, l := range fstab {
			f := strings.Fields(l)
			// cloud-init adds comment=cloudconfig to the options.
			found = found || len(f) >= len(mp) && slices.Equal(f[:3], mp[:3]) && (len(mp) < 4 || strings.HasPrefix(f[3], mp[3]+","))
		}
		if !found {
			t.Errorf("fstab has no %v:\n%s", mp, strings.Join(fstab, "\n"))
		}
	}
}

// checkUsers: every user with its primary group, groups, shell, home, password
// hash, expiry, SSH keys (in keysFile under the home) and sudo rule.
func checkUsers(t *testing.T, m *machine, spec bootstrapv1.KThreesConfigSpec, keysFile string) {
	t.Helper()
	users, groups, shadow := m.entries("/etc/passwd"), m.entries("/etc/group"), m.entries("/etc/shadow")
	for _, u := range spec.Users {
		pw, ok := users[u.Name]
		if !ok {
			t.Errorf("user %s was not created", u.Name)
			continue
		}
		if u.PrimaryGroup != "" {
			if g, ok := groups[u.PrimaryGroup]; !ok || g[2] != pw[3] {
				t.Errorf("user %s: gid %s, want group %s (%v)", u.Name, pw[3], u.PrimaryGroup, g)
			}
		}
		for g := range strings.SplitSeq(u.Groups, ",") {
			g = strings.TrimSpace(g)
			if e, ok := groups[g]; g != "" && (!ok || !slices.Contains(strings.Split(e[3], ","), u.Name)) {
				t.Errorf("user %s is not in group %s (%v)", u.Name, g, e)
			}
		}
		if u.Shell != "" && pw[6] != u.Shell || u.HomeDir != "" && pw[5] != u.HomeDir {
			t.Errorf("user %s: %v", u.Name, pw)
		}
		if u.PasswdFrom != nil && shadow[u.Name][1] != pwHash {
			t.Errorf("user %s: shadow %v", u.Name, shadow[u.Name])
		}
		if u.Inactive != nil && *u.Inactive && shadow[u.Name][7] == "" {
			t.Errorf("inactive user %s has no expiry: %v", u.Name, shadow[u.Name])
		}
		for _, k := range u.SSHAuthorizedKeys {
			if !strings.Contains(m.read(path.Join(pw[5], keysFile)), k) {
				t.Errorf("user %s: key %q not authorized", u.Name, k)
			}
		}
		if u.Sudo != "" && !strings.Contains(m.read("/etc/sudoers.d/90-cloud-init-users"), u.Name+" "+u.Sudo) {
			t.Errorf("user %s: sudoers = %q", u.Name, m.read("/etc/sudoers.d/90-cloud-init-users"))
		}
	}
}

// checkCalls: want comes in this order in the calls log.
func checkCalls(t *testing.T, m *machine, want []string) {
	t.Helper()
	got := m.calls()
	i := 0
	for _, c := range got {
		if i < len(want) && c == want[i] {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("calls:\n%s\nwant in this order:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
