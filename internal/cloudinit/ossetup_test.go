package cloudinit

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_4/types"
	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

const testPasswordHash = "$6$rounds=4096$saltsalt$Q9C0mBFSmQ0mRFfXQbqqCTnWSXqWzTn6sFXnG2hUJYYxVvb0tnH1kA3m6vQd0iA1Hq3y1oRbq1kQv5Nc0Vx4r/"

// osSetupSpec uses every OS setup field that both formats carry.
func osSetupSpec() bootstrapv1.KThreesConfigSpec {
	return bootstrapv1.KThreesConfigSpec{
		BootCommands:   []string{"echo boot-1", "mkdir -p /var/lib/early"},
		PreK3sCommands: []string{"echo pre"},
		NTP:            &bootstrapv1.NTP{Enabled: ptr.To(true), Servers: []string{"0.pool.ntp.org", "time.example.com"}},
		Users: []bootstrapv1.User{
			{
				Name: "ops", Gecos: "Operations", Groups: "wheel, docker", HomeDir: "/home/ops", Shell: "/bin/bash",
				PrimaryGroup: "ops", SSHAuthorizedKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOps ops@example.com"},
				PasswdFrom: &bootstrapv1.PasswdSource{Secret: bootstrapv1.SecretKeyReference{Name: "ops-password", Key: "hash"}},
			},
			{Name: "audit", SSHAuthorizedKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAud audit@example.com"}},
		},
		DiskSetup: &bootstrapv1.DiskSetup{
			Partitions:  []bootstrapv1.Partition{{Device: "/dev/sdb", Layout: ptr.To(true), TableType: "gpt", Overwrite: ptr.To(false)}},
			Filesystems: []bootstrapv1.Filesystem{{Device: "/dev/sdb", Partition: "1", Filesystem: "ext4", Label: "k3s-data", ExtraOpts: []string{"-E", "lazy_itable_init=1"}}},
		},
		Mounts: []bootstrapv1.MountPoints{
			{"LABEL=k3s-data", "/var/lib/rancher", "ext4", "defaults,noatime"},
			{"/dev/nvme1n1", "/var/lib/longhorn"},
		},
	}
}

func osSetupGoldenCase() goldenCase {
	return goldenCase{
		name: "os-setup",
		in: Input{
			Role: Agent, Spec: osSetupSpec(), Version: "v1.35.4+k3s1",
			ServerURL: testServerURL, Token: testAgentToken,
			UserPasswords: map[string]string{"ops": testPasswordHash + "\n"},
			// Owned by a user of spec.users (deferred in cloud-config), and by IDs
			// (chowned in cloud-config): see TestRenderFileOwners.
			Files: []File{
				{Path: "/home/ops/.bashrc", Owner: "ops:ops", Content: "export EDITOR=vi\n"},
				{Path: "/var/lib/app/state", Owner: "1000:1000", Permissions: "0640", Content: "ready\n"},
			},
		},
		wantConfig: map[string]any{"token": testAgentToken, "server": testServerURL, "kubelet-arg": anyList("cloud-provider=external"),
			"node-taint": anyList(uninitializedTaint)},
		wantRunCmd: []string{"chown '1000:1000' '/var/lib/app/state' || exit 1", "echo pre",
			"curl -sfL 'https://get.k3s.io' | INSTALL_K3S_VERSION='v1.35.4+k3s1' sh -s - agent", agentSentinel},
		wantPaths: []string{k3sConfigPath, "/home/ops/.bashrc", "/var/lib/app/state"},
	}
}

// TestRenderOSSetupCloudConfig checks the cloud-init keys of the golden case.
func TestRenderOSSetupCloudConfig(t *testing.T) {
	out, err := Render(osSetupGoldenCase().in)
	if err != nil {
		t.Fatal(err)
	}
	p := parse(t, out)
	if !reflect.DeepEqual(p.BootCmd, []string{"echo boot-1", "mkdir -p /var/lib/early"}) {
		t.Errorf("bootcmd = %q", p.BootCmd)
	}
	if p.NTP == nil || !ptr.Deref(p.NTP.Enabled, false) || !reflect.DeepEqual(p.NTP.Servers, []string{"0.pool.ntp.org", "time.example.com"}) {
		t.Errorf("ntp = %+v", p.NTP)
	}
	wantUsers := []ccUser{
		{Name: "ops", Gecos: "Operations", Groups: "wheel, docker", HomeDir: "/home/ops", Shell: "/bin/bash", PrimaryGroup: "ops",
			Passwd: testPasswordHash, LockPasswd: false, SSHAuthorizedKeys: osSetupSpec().Users[0].SSHAuthorizedKeys},
		{Name: "audit", LockPasswd: true, SSHAuthorizedKeys: osSetupSpec().Users[1].SSHAuthorizedKeys},
	}
	if !reflect.DeepEqual(p.Users, wantUsers) {
		t.Errorf("users = %+v\nwant %+v", p.Users, wantUsers)
	}
	if d := p.DiskSetup["/dev/sdb"]; d.TableType != "gpt" || d.Layout != true || d.Overwrite == nil || *d.Overwrite {
		t.Errorf("disk_setup = %+v", p.DiskSetup)
	}
	// Partition 1 travels in the device name: see TestRenderFilesystemPartition.
	if len(p.FSSetup) != 1 || p.FSSetup[0].Label != "k3s-data" || p.FSSetup[0].Device != "/dev/sdb.1" || p.FSSetup[0].Partition != "" {
		t.Errorf("fs_setup = %+v", p.FSSetup)
	}
	if want := [][]string{{"LABEL=k3s-data", "/var/lib/rancher", "ext4", "defaults,noatime"}, {"/dev/nvme1n1", "/var/lib/longhorn"}}; !reflect.DeepEqual(p.Mounts, want) {
		t.Errorf("mounts = %q", p.Mounts)
	}
}

// TestRenderOSSetupIgnition checks the Ignition equivalents of the golden case.
func TestRenderOSSetupIgnition(t *testing.T) {
	out, err := Render(asIgnition(osSetupGoldenCase().in))
	if err != nil {
		t.Fatal(err)
	}
	p := parseIgnition(t, out)
	if p.bootScript != "#!/bin/sh\necho boot-1\nmkdir -p /var/lib/early\n" {
		t.Errorf("boot commands script = %q", p.bootScript)
	}
	if p.ntp != "[Time]\nNTP=0.pool.ntp.org time.example.com\n" {
		t.Errorf("timesyncd drop-in = %q", p.ntp)
	}
	units := map[string]igntypes.Unit{}
	for _, u := range p.units {
		units[u.Name] = u
	}
	if u := units[bootCommandsUnitName]; u.Contents == nil || !strings.Contains(*u.Contents, "\nBefore=capk3s-bootstrap.service\n") ||
		strings.Contains(*u.Contents, "ConditionPathExists") {
		t.Errorf("boot commands unit must run on every boot, before the bootstrap: %+v", u)
	}
	if u := units[timesyncdUnitName]; !ptr.Deref(u.Enabled, false) {
		t.Errorf("%s not enabled", timesyncdUnitName)
	}
	for name, lines := range map[string][]string{
		"var-lib-rancher.mount":  {"What=/dev/disk/by-label/k3s-data", "Where=/var/lib/rancher", "Type=ext4", "Options=defaults,noatime", "WantedBy=local-fs.target"},
		"var-lib-longhorn.mount": {"What=/dev/nvme1n1", "Where=/var/lib/longhorn", "Options=defaults,nofail"},
	} {
		u := units[name]
		if u.Contents == nil || !ptr.Deref(u.Enabled, false) {
			t.Errorf("mount unit %s missing or not enabled: %+v", name, units)
			continue
		}
		for _, l := range lines {
			if !strings.Contains(*u.Contents, "\n"+l+"\n") {
				t.Errorf("%s lacks %q:\n%s", name, l, *u.Contents)
			}
		}
	}
	want := []igntypes.PasswdUser{
		{Name: "ops", Gecos: ptr.To("Operations"), Groups: []igntypes.Group{"wheel", "docker"}, HomeDir: ptr.To("/home/ops"),
			Shell: ptr.To("/bin/bash"), PrimaryGroup: ptr.To("ops"), PasswordHash: ptr.To(testPasswordHash),
			SSHAuthorizedKeys: []igntypes.SSHAuthorizedKey{igntypes.SSHAuthorizedKey(osSetupSpec().Users[0].SSHAuthorizedKeys[0])}},
		{Name: "audit", SSHAuthorizedKeys: []igntypes.SSHAuthorizedKey{igntypes.SSHAuthorizedKey(osSetupSpec().Users[1].SSHAuthorizedKeys[0])}},
	}
	if !reflect.DeepEqual(p.cfg.Passwd.Users, want) {
		t.Errorf("passwd.users = %+v\nwant %+v", p.cfg.Passwd.Users, want)
	}
	disks, fss := p.cfg.Storage.Disks, p.cfg.Storage.Filesystems
	if len(disks) != 1 || disks[0].Device != "/dev/sdb" || len(disks[0].Partitions) != 1 || disks[0].Partitions[0].Number != 1 {
		t.Errorf("storage.disks = %+v", disks)
	}
	if len(fss) != 1 || fss[0].Device != "/dev/sdb1" || *fss[0].Format != "ext4" || *fss[0].Label != "k3s-data" ||
		!reflect.DeepEqual(fss[0].Options, []igntypes.FilesystemOption{"-E", "lazy_itable_init=1"}) {
		t.Errorf("storage.filesystems = %+v", fss)
	}
}

// cloudConfigOnlySpec uses what only cloud-init can do; Ignition refuses each.
func cloudConfigOnlySpec() bootstrapv1.KThreesConfigSpec {
	return bootstrapv1.KThreesConfigSpec{
		Users: []bootstrapv1.User{{Name: "admin", Sudo: "ALL=(ALL) NOPASSWD:ALL", Inactive: ptr.To(true), LockPassword: ptr.To(true),
			PasswdFrom: &bootstrapv1.PasswdSource{Secret: bootstrapv1.SecretKeyReference{Name: "admin", Key: "hash"}}}},
		DiskSetup: &bootstrapv1.DiskSetup{
			Partitions: []bootstrapv1.Partition{
				{Device: "/dev/sdc", DiskLayout: []bootstrapv1.PartitionSpec{{Percentage: 20, PartitionType: "LinuxSwap"}, {Percentage: 80}}},
			},
			Filesystems: []bootstrapv1.Filesystem{{Device: "ephemeral0.1", Partition: "auto", Filesystem: "ntfs", ReplaceFS: "ntfs"}},
		},
		Mounts: []bootstrapv1.MountPoints{{"ephemeral0", "/mnt"}, {"swap", "none", "swap", "sw", "0", "0"}},
	}
}

func TestRenderOSSetupCloudConfigOnly(t *testing.T) {
	in := minimal(Agent)
	in.Spec = cloudConfigOnlySpec()
	in.UserPasswords = map[string]string{"admin": testPasswordHash}
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "os-setup-cloud-config-only.yaml")
	if *update {
		if err := os.WriteFile(golden, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want, err := os.ReadFile(golden); err != nil || string(want) != string(out) {
		t.Errorf("output differs from %s (run with -update if intended; %v):\n%s", golden, err, out)
	}
	p := parse(t, out)
	if u := p.Users[0]; u.Sudo != "ALL=(ALL) NOPASSWD:ALL" || u.ExpireDate != inactiveExpireDate || !u.LockPasswd || u.Passwd != testPasswordHash {
		t.Errorf("user = %+v", u)
	}
	// 20% swap (MBR code 82, an integer), then 80% Linux (the default, no code).
	if got := p.DiskSetup["/dev/sdc"].Layout; !reflect.DeepEqual(got, []any{[]any{float64(20), float64(82)}, float64(80)}) {
		t.Errorf("layout = %#v", got)
	}

	// Every cloud-config-only setting is refused for Ignition, each by its field.
	_, err = Render(asIgnition(in))
	if err == nil {
		t.Fatal("Ignition rendered cloud-config-only settings")
	}
	for _, f := range []string{
		"spec.users[0].sudo", "spec.users[0].inactive", "spec.users[0].lockPassword",
		"spec.diskSetup.partitions[0].diskLayout", "spec.diskSetup.partitions[0].tableType",
		"spec.diskSetup.filesystems[0].device", "spec.diskSetup.filesystems[0].partition",
		"spec.diskSetup.filesystems[0].replaceFS", "spec.diskSetup.filesystems[0].filesystem",
		"spec.mounts[0]", "spec.mounts[1]",
	} {
		if !strings.Contains(err.Error(), f+":") {
			t.Errorf("Ignition error does not name %s: %v", f, err)
		}
	}
}

func TestRenderOSSetupErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate  func(*Input)
		wantErr string
	}{
		"empty boot command":             {func(in *Input) { in.Spec.BootCommands = []string{"echo", ""} }, "spec.bootCommands[1] is empty"},
		"boot command YAML would retype": {func(in *Input) { in.Spec.BootCommands = []string{"="} }, "spec.bootCommands[0]"},
		"user without name":              {func(in *Input) { in.Spec.Users = []bootstrapv1.User{{Shell: "/bin/sh"}} }, "spec.users[0].name is empty"},
		"duplicate user": {func(in *Input) { in.Spec.Users = []bootstrapv1.User{{Name: "a"}, {Name: "a"}} },
			`spec.users[1].name "a" is also spec.users[0]`},
		"password not resolved": {func(in *Input) {
			in.Spec.Users = []bootstrapv1.User{{Name: "a", PasswdFrom: &bootstrapv1.PasswdSource{Secret: bootstrapv1.SecretKeyReference{Name: "s", Key: "k"}}}}
		}, `spec.users[0].passwdFrom: the password of user "a" was not resolved`},
		"clear-text password": {func(in *Input) {
			in.Spec.Users = []bootstrapv1.User{{Name: "a", PasswdFrom: &bootstrapv1.PasswdSource{Secret: bootstrapv1.SecretKeyReference{Name: "s", Key: "k"}}}}
			in.UserPasswords = map[string]string{"a": "hunter2"}
		}, `key "k" of Secret s is not a crypt(3) password hash`},
		"ssh key with a newline": {func(in *Input) {
			in.Spec.Users = []bootstrapv1.User{{Name: "a", SSHAuthorizedKeys: []string{"ssh-rsa A\nssh-rsa B"}}}
		},
			"spec.users[0].sshAuthorizedKeys[0]"},
		"mount without device": {func(in *Input) { in.Spec.Mounts = []bootstrapv1.MountPoints{{}} }, "spec.mounts[0] has no device"},
		"partition without device": {func(in *Input) {
			in.Spec.DiskSetup = &bootstrapv1.DiskSetup{Partitions: []bootstrapv1.Partition{{Layout: ptr.To(true)}}}
		}, "spec.diskSetup.partitions[0].device is empty"},
		"two mounts on one mount point": {func(in *Input) { in.Spec.Mounts = []bootstrapv1.MountPoints{{"/dev/a", "/x"}, {"/dev/b", "/x"}} },
			"spec.mounts[1] mounts on /x as spec.mounts[0] does"},
		"two partition tables on one device": {func(in *Input) {
			in.Spec.DiskSetup = &bootstrapv1.DiskSetup{Partitions: []bootstrapv1.Partition{{Device: "/dev/sdb"}, {Device: "/dev/sdb"}}}
		}, `spec.diskSetup.partitions[1].device "/dev/sdb" is also spec.diskSetup.partitions[0]`},
		"filesystem without device": {func(in *Input) {
			in.Spec.DiskSetup = &bootstrapv1.DiskSetup{Filesystems: []bootstrapv1.Filesystem{{Filesystem: "ext4"}}}
		}, "spec.diskSetup.filesystems[0].device is empty"},
		"layout over 100%": {func(in *Input) {
			in.Spec.DiskSetup = &bootstrapv1.DiskSetup{Partitions: []bootstrapv1.Partition{{Device: "/dev/sdb",
				DiskLayout: []bootstrapv1.PartitionSpec{{Percentage: 60}, {Percentage: 50}}}}}
		}, "takes 110% of the disk"},
		"GUID on MBR": {func(in *Input) {
			in.Spec.DiskSetup = &bootstrapv1.DiskSetup{Partitions: []bootstrapv1.Partition{{Device: "/dev/sdb",
				DiskLayout: []bootstrapv1.PartitionSpec{{Percentage: 60, PartitionType: "0FC63DAF-8483-4772-8E79-3D69D8477DE4"}}}}}
		}, "set tableType gpt"},
		"ntp servers while disabled": {func(in *Input) { in.Spec.NTP = &bootstrapv1.NTP{Enabled: ptr.To(false), Servers: []string{"a"}} },
			"spec.ntp.enabled is false"},
		"ntp server with a space": {func(in *Input) { in.Spec.NTP = &bootstrapv1.NTP{Servers: []string{"a b"}} }, "spec.ntp.servers[0]"},
	} {
		t.Run(name, func(t *testing.T) {
			in := minimal(Agent)
			tc.mutate(&in)
			_, err := Render(in)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Render error = %v, want %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error carries the password: %v", err)
			}
		})
	}
}

// A user's file cannot take the place of the OS setup's own Ignition files.
func TestRenderIgnitionReservedOSPaths(t *testing.T) {
	for _, p := range []string{bootCommandsScriptPath, timesyncdDropInPath} {
		in := asIgnition(minimal(Agent))
		in.Files = []File{{Path: p, Content: "x"}}
		if _, err := Render(in); err == nil || !strings.Contains(err.Error(), "is where capk3s writes") {
			t.Errorf("%s: Render error = %v", p, err)
		}
	}
}

// randLine is arbitrary one-line text that Render takes in a one-line setting.
func randLine(r *rand.Rand) string {
	for {
		if c := randCommand(r); c != "" && !strings.ContainsAny(c, "\n\r") {
			return c
		}
	}
}

// randOSSetup adds random boot commands and users (of arbitrary text, but with
// unique names) to in.
func randOSSetup(r *rand.Rand, in *Input) {
	for range r.IntN(4) {
		c := randCommand(r)
		if c == "" {
			c = "true"
		}
		in.Spec.BootCommands = append(in.Spec.BootCommands, c)
	}
	for j := range r.IntN(3) {
		u := bootstrapv1.User{Name: fmt.Sprintf("u%d", j), Gecos: randLine(r), Shell: randLine(r), SSHAuthorizedKeys: []string{randLine(r)}}
		if r.IntN(2) == 0 {
			u.PasswdFrom = &bootstrapv1.PasswdSource{Secret: bootstrapv1.SecretKeyReference{Name: "s", Key: u.Name}}
			if in.UserPasswords == nil {
				in.UserPasswords = map[string]string{}
			}
			in.UserPasswords[u.Name] = testPasswordHash
		}
		in.Spec.Users = append(in.Spec.Users, u)
	}
}

// checkOSRoundTrip checks that the boot commands and users arrive in cloud-config
// as given.
func checkOSRoundTrip(t testing.TB, in Input, out []byte) {
	t.Helper()
	p := parse(t, out)
	if !slices.Equal(p.BootCmd, in.Spec.BootCommands) {
		t.Errorf("bootcmd = %q, want %q", p.BootCmd, in.Spec.BootCommands)
	}
	if len(p.Users) != len(in.Spec.Users) {
		t.Fatalf("%d users, want %d", len(p.Users), len(in.Spec.Users))
	}
	for i, u := range in.Spec.Users {
		got := p.Users[i]
		if got.Name != u.Name || got.Gecos != u.Gecos || got.Shell != u.Shell || !slices.Equal(got.SSHAuthorizedKeys, u.SSHAuthorizedKeys) ||
			(u.PasswdFrom != nil) != (got.Passwd == testPasswordHash) {
			t.Errorf("user %d = %+v, want %+v", i, got, u)
		}
	}
}
