package bootstrap

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// validOSSetup is the OS setup of validSpec: every field, valid in both formats.
func validOSSetup() bootstrapv1.KThreesConfigSpec {
	return bootstrapv1.KThreesConfigSpec{
		BootCommands: []string{"echo boot"},
		NTP:          &bootstrapv1.NTP{Servers: []string{"time.example.com"}},
		Users: []bootstrapv1.User{
			{Name: "ops", Groups: "wheel", SSHAuthorizedKeys: []string{"ssh-ed25519 AAAA ops"},
				PasswdFrom: &bootstrapv1.PasswdSource{Secret: bootstrapv1.SecretKeyReference{Name: "ops-password", Key: "hash"}}},
			{Name: "audit"},
		},
		DiskSetup: &bootstrapv1.DiskSetup{
			Partitions:  []bootstrapv1.Partition{{Device: "/dev/sdb", Layout: ptr.To(true), TableType: "gpt"}},
			Filesystems: []bootstrapv1.Filesystem{{Device: "/dev/sdb", Partition: "1", Filesystem: "ext4", Label: "data"}},
		},
		Mounts: []bootstrapv1.MountPoints{{"LABEL=data", "/var/lib/data"}},
	}
}

func TestValidateOSSetup(t *testing.T) {
	ignition := func(s *bootstrapv1.KThreesConfigSpec) { s.Format = bootstrapv1.Ignition }
	tests := []struct {
		name   string
		modify func(*bootstrapv1.KThreesConfigSpec)
		want   []wantErr
	}{
		{name: "valid, cloud-config", modify: func(*bootstrapv1.KThreesConfigSpec) {}},
		{name: "valid, ignition", modify: ignition},
		{name: "empty boot command", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.BootCommands = []string{"echo", ""} },
			want: []wantErr{{"spec.bootCommands[1]", "must not be empty"}}},
		{name: "user without name", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Users[1].Name = "" },
			want: []wantErr{{"spec.users[1].name", "a user needs a login name"}}},
		{name: "user name useradd refuses", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Users[1].Name = "Bob Smith" },
			want: []wantErr{{"spec.users[1].name", "must be a login name useradd accepts"}}},
		{name: "duplicate users", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Users[1].Name = "ops" },
			want: []wantErr{{"spec.users[1].name", "spec.users[0].name already creates this user"}}},
		{name: "empty SSH key", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Users[0].SSHAuthorizedKeys = []string{""} },
			want: []wantErr{{"spec.users[0].sshAuthorizedKeys[0]", "Required value"}}},
		{name: "password Secret not a name", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Users[0].PasswdFrom.Secret.Name = "Bad_Name" },
			want: []wantErr{{"spec.users[0].passwdFrom.secret.name", "must be a valid Secret name"}}},
		{name: "password pasted as key", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Users[0].PasswdFrom.Secret.Key = "hunter 2!" },
			want: []wantErr{{"spec.users[0].passwdFrom.secret.key", "must be a valid Secret data key"}}},
		{name: "empty mount", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Mounts = append(s.Mounts, bootstrapv1.MountPoints{}) },
			want: []wantErr{{"spec.mounts[1]", "a mount needs at least its device"}}},
		{name: "empty mount field", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Mounts[0] = bootstrapv1.MountPoints{"", "/mnt"} },
			want: []wantErr{{"spec.mounts[0][0]", "must not be empty"}}},
		{name: "two mounts on one mount point", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.Mounts = append(s.Mounts, bootstrapv1.MountPoints{"/dev/sdc", "/var/lib/data"})
		}, want: []wantErr{{"spec.mounts[1][1]", "spec.mounts[0][1] already mounts something here"}}},
		{name: "two partition tables on one device", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.DiskSetup.Partitions = append(s.DiskSetup.Partitions, bootstrapv1.Partition{Device: "/dev/sdb", Layout: ptr.To(false)})
		}, want: []wantErr{{"spec.diskSetup.partitions[1].device", "spec.diskSetup.partitions[0].device already lays out this device"}}},
		{name: "partition without device", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.DiskSetup.Partitions[0].Device = "" },
			want: []wantErr{{"spec.diskSetup.partitions[0].device", "the device to partition"}}},
		{name: "filesystem without device or type", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.DiskSetup.Filesystems[0].Device, s.DiskSetup.Filesystems[0].Filesystem = "", ""
		}, want: []wantErr{{"spec.diskSetup.filesystems[0].device", "the device to format"}, {"spec.diskSetup.filesystems[0].filesystem", "ext4"}}},
		{name: "filesystem partition cloud-init does not read", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.DiskSetup.Filesystems[0].Partition = "first"
		}, want: []wantErr{{"spec.diskSetup.filesystems[0].partition", `"first" is not a partition number or auto, any or none`}}},
		{name: "filesystem partition with a leading zero", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.DiskSetup.Filesystems[0].Partition = "01"
		}, want: []wantErr{{"spec.diskSetup.filesystems[0].partition", `"01" is not a partition number`}}},
		{name: "filesystem partition of a short name that names one", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.DiskSetup.Filesystems[0].Device, s.DiskSetup.Filesystems[0].Partition = "ephemeral0.1", "2"
		}, want: []wantErr{{"spec.diskSetup.filesystems[0].partition", `device "ephemeral0.1" already names partition 1`}}},
		{name: "layout and diskLayout", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.DiskSetup.Partitions[0].DiskLayout = []bootstrapv1.PartitionSpec{{Percentage: 100}}
		}, want: []wantErr{{"spec.diskSetup.partitions[0].diskLayout", "set either layout or diskLayout"}}},
		{name: "diskLayout over 100%", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.DiskSetup.Partitions[0].Layout = nil
			s.DiskSetup.Partitions[0].DiskLayout = []bootstrapv1.PartitionSpec{{Percentage: 70}, {Percentage: 40, PartitionType: "LinuxExtended"}}
		}, want: []wantErr{{"spec.diskSetup.partitions[0].diskLayout[1].partitionType", "MBR tables only"}, {"spec.diskSetup.partitions[0].diskLayout", "more than 100"}}},
		{name: "ntp disabled with servers", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.NTP.Enabled = ptr.To(false) },
			want: []wantErr{{"spec.ntp.servers", "would never be used"}}},
		{name: "ntp enabled without servers", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.NTP = &bootstrapv1.NTP{Enabled: ptr.To(true)} }},
		{name: "two ntp servers in one entry", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.NTP.Servers = []string{"a.example.com b.example.com"} },
			want: []wantErr{{"spec.ntp.servers[0]", "without spaces"}}},
		{name: "two SSH keys in one entry", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.Users[0].SSHAuthorizedKeys = []string{"ssh-rsa A\nssh-rsa B"}
		},
			want: []wantErr{{"spec.users[0].sshAuthorizedKeys[0]", "must be one line"}}},
		{name: "gecos over two lines", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Users[1].Gecos = "a\nb" },
			want: []wantErr{{"spec.users[1].gecos", "must be one line"}}},
		{name: "mount field with a tab", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Mounts[0][1] = "/var/lib/\tdata" },
			want: []wantErr{{"spec.mounts[0][1]", "must be one line"}}},
		{name: "empty ntp server", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.NTP.Servers = []string{""} },
			want: []wantErr{{"spec.ntp.servers[0]", "Required value"}}},

		// What Ignition cannot say is refused for format ignition only.
		{name: "sudo, cloud-config", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Users[0].Sudo = "ALL=(ALL) ALL" }},
		{name: "sudo, ignition", modify: func(s *bootstrapv1.KThreesConfigSpec) { ignition(s); s.Users[0].Sudo = "ALL=(ALL) ALL" },
			want: []wantErr{{"spec.users[0].sudo", "Ignition has no sudo setting"}}},
		{name: "inactive and locked with a password, ignition", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			ignition(s)
			s.Users[0].Inactive, s.Users[0].LockPassword = ptr.To(true), ptr.To(true)
		}, want: []wantErr{{"spec.users[0].inactive", "disabled account"}, {"spec.users[0].lockPassword", "Ignition locks exactly"}}},
		{name: "locked without a password, ignition", modify: func(s *bootstrapv1.KThreesConfigSpec) { ignition(s); s.Users[1].LockPassword = ptr.To(true) }},
		{name: "mbr partition, ignition", modify: func(s *bootstrapv1.KThreesConfigSpec) { ignition(s); s.DiskSetup.Partitions[0].TableType = "" },
			want: []wantErr{{"spec.diskSetup.partitions[0].tableType", "GPT partition tables only"}}},
		{name: "diskLayout, ignition", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			ignition(s)
			s.DiskSetup.Partitions[0].Layout = nil
			s.DiskSetup.Partitions[0].DiskLayout = []bootstrapv1.PartitionSpec{{Percentage: 100}}
		}, want: []wantErr{{"spec.diskSetup.partitions[0].diskLayout", "MiB"}}},
		{name: "short device names, ignition", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			ignition(s)
			s.DiskSetup.Partitions[0].Device, s.DiskSetup.Filesystems[0].Device = "sdb", "ephemeral0"
		}, want: []wantErr{
			{"spec.diskSetup.partitions[0].device", "not cloud-init's short device names"},
			{"spec.diskSetup.filesystems[0].device", "not cloud-init's short device names"},
		}},
		{name: "filesystem partition auto and replaceFS, ignition", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			ignition(s)
			s.DiskSetup.Filesystems[0].Partition, s.DiskSetup.Filesystems[0].ReplaceFS, s.DiskSetup.Filesystems[0].Filesystem = "auto", "ntfs", "ntfs"
		}, want: []wantErr{
			{"spec.diskSetup.filesystems[0].partition", "not cloud-init's \"auto\""},
			{"spec.diskSetup.filesystems[0].replaceFS", "Ignition has none"},
			{"spec.diskSetup.filesystems[0].filesystem", `Unsupported value: "ntfs"`},
		}},
		{name: "short mount device and swap, ignition", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			ignition(s)
			s.Mounts = []bootstrapv1.MountPoints{{"ephemeral0", "/mnt"}, {"/dev/sdc", "none", "swap"}, {"/dev/sdd", "/data", "xfs", "defaults", "0", "2"}, {"/dev/sde"}}
		}, want: []wantErr{
			{"spec.mounts[0]", "not cloud-init's short device names"},
			{"spec.mounts[1]", "must be a clean absolute path"},
			{"spec.mounts[2]", "field 6 (pass) must be 0"},
			{"spec.mounts[3]", "the mount point (second field) is required by Ignition"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := validSpec()
			tt.modify(&spec)
			checkErrors(t, validateSpec(&spec, field.NewPath("spec")), tt.want)
		})
	}
}

// Through the apiserver, for configs and templates alike (see badSpecs).
func init() {
	badSpecs = append(badSpecs,
		badSpec{name: "user without name", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Users[1].Name = "" },
			path: "users[1].name", message: "should be at least 1 chars long", bySchema: true},
		badSpec{name: "duplicate user names", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Users[1].Name = "ops" },
			path: "users[1].name", message: "spec.users[0].name already creates this user"},
		badSpec{name: "empty boot command", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.BootCommands = []string{""} },
			path: "bootCommands[0]", message: "should be at least 1 chars long", bySchema: true},
		badSpec{name: "empty mount entry", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Mounts = []bootstrapv1.MountPoints{{}} },
			path: "mounts[0]", message: "should have at least 1 items", bySchema: true},
		badSpec{name: "disk device empty", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.DiskSetup.Partitions[0].Device = "" },
			path: "diskSetup.partitions[0].device", message: "should be at least 1 chars long", bySchema: true},
		badSpec{name: "filesystem partition cloud-init does not read", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.DiskSetup.Filesystems[0].Partition = "p1"
		}, path: "diskSetup.filesystems[0].partition", message: "is not a partition number or auto, any or none"},
		badSpec{name: "ntp servers while disabled", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.NTP.Enabled = ptr.To(false) },
			path: "ntp.servers", message: "would never be used"},
		badSpec{name: "sudo with ignition", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.Format = bootstrapv1.Ignition
			s.Users[0].Sudo = "ALL=(ALL) NOPASSWD:ALL"
		}, path: "users[0].sudo", message: "Ignition has no sudo setting"},
	)
}
