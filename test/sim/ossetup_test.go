package sim

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_4/types"
	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
)

const simPasswordHash = "$6$rounds=4096$simsalt$c2ltdWxhdGVkaGFzaHNpbXVsYXRlZGhhc2hzaW11bGF0ZWRoYXNo"

// osSetupInput is an agent with every OS setup field both formats carry.
func osSetupInput(format bootstrapv1.Format) cloudinit.Input {
	in := fullInput(cloudinit.Agent, clusterCAs{})
	in.Spec.Format = format
	in.Spec.BootCommands = []string{"echo boot", "modprobe br_netfilter"}
	in.Spec.NTP = &bootstrapv1.NTP{Servers: []string{"time1.example.com", "time2.example.com"}}
	in.Spec.Users = []bootstrapv1.User{
		{Name: "ops", Groups: "wheel", PasswdFrom: &bootstrapv1.PasswdSource{Secret: bootstrapv1.SecretKeyReference{Name: "p", Key: "k"}}},
		{Name: "audit", SSHAuthorizedKeys: []string{"ssh-ed25519 AAAA audit"}},
	}
	in.Spec.DiskSetup = &bootstrapv1.DiskSetup{
		Partitions:  []bootstrapv1.Partition{{Device: "/dev/vdb", Layout: ptr.To(true), TableType: "gpt"}},
		Filesystems: []bootstrapv1.Filesystem{{Device: "/dev/vdb", Partition: "1", Filesystem: "xfs", Label: "data"}},
	}
	in.Spec.Mounts = []bootstrapv1.MountPoints{{"LABEL=data", "/var/lib/rancher"}, {"/dev/vdc", "/srv/x-y"}}
	in.UserPasswords = map[string]string{"ops": simPasswordHash}
	// Owned by a user of users, and by IDs: cloud-init sets neither at write time.
	in.Files = append(in.Files,
		cloudinit.File{Path: "/home/ops/.profile", Owner: "ops:ops", Content: "export EDITOR=vi\n"},
		cloudinit.File{Path: "/var/lib/app/state", Owner: "1000:1000", Content: "ready\n"})
	return in
}

// The simulator reads the OS setup from both formats alike, and it passes its
// checks: the renderer's output boots.
func TestOSSetupReadFromBothFormats(t *testing.T) {
	t.Parallel()
	cc, err := readBootData(mustRender(t, osSetupInput("")), "cloud-config")
	if err != nil {
		t.Fatal(err)
	}
	ign, err := readBootData(mustRender(t, osSetupInput(bootstrapv1.Ignition)), "ignition")
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]*bootData{"cloud-config": cc, "ignition": ign} {
		if err := b.checkStatic(); err != nil {
			t.Errorf("%s: checkStatic: %v", name, err)
		}
		o := b.os
		if !o.bootFirst || !reflect.DeepEqual(o.bootCommands, []string{"echo boot", "modprobe br_netfilter"}) {
			t.Errorf("%s: boot commands %q, first %v", name, o.bootCommands, o.bootFirst)
		}
		if o.ntp == nil || !o.ntp.enabled || !reflect.DeepEqual(o.ntp.servers, []string{"time1.example.com", "time2.example.com"}) {
			t.Errorf("%s: ntp %+v", name, o.ntp)
		}
		if want := []osUser{{name: "ops", passwd: simPasswordHash}, {name: "audit"}}; !reflect.DeepEqual(o.users, want) {
			t.Errorf("%s: users %+v", name, o.users)
		}
		if !reflect.DeepEqual(o.partitioned, []string{"/dev/vdb"}) || len(o.filesystems) != 1 || o.filesystems[0].label != "data" {
			t.Errorf("%s: disks %q, file systems %+v", name, o.partitioned, o.filesystems)
		}
		if len(o.mounts) != 2 || o.mounts[0].where != "/var/lib/rancher" || o.mounts[1] != (osMount{device: "/dev/vdc", where: "/srv/x-y"}) {
			t.Errorf("%s: mounts %+v", name, o.mounts)
		}
	}
	// Partition 1 of /dev/vdb, as cloud-init reads it.
	if f := cc.os.filesystems[0]; f != (osFilesystem{device: "/dev/vdb", partition: "1", label: "data"}) {
		t.Errorf("cloud-config file system = %+v", f)
	}
	if ign.mountsByLabel() != "/dev/disk/by-label/data" || cc.mountsByLabel() != "LABEL=data" {
		t.Errorf("label mounts: Ignition %q, cloud-config %q", ign.mountsByLabel(), cc.mountsByLabel())
	}
}

func (b *bootData) mountsByLabel() string { return b.os.mounts[0].device }

// Broken OS setup in cloud-config fails the boot.
func TestCheckOSSetupCloudConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, extra, wantErr string }{
		{"user without name", "users:\n- gecos: nobody\n", "user 0 has no name"},
		{"user twice", "users:\n- name: a\n- a\n", "user a is created twice"},
		{"clear-text password", "users:\n- name: a\n  passwd: hunter2\n", "user a: the password is not a crypt(3) hash"},
		{"boot command installs k3s", "bootcmd:\n- curl -sfL 'https://get.k3s.io' | INSTALL_K3S_VERSION='v1.35.4+k3s1' sh -s - agent\n", "boot command 0 installs k3s"},
		{"boot command not a string", "bootcmd:\n- [echo, x]\n", "bootcmd[0] is []interface {}"},
		{"ntp server with a space", "ntp:\n  servers: [\"a b\"]\n", `ntp server 0 "a b"`},
		{"mount of an unknown label", "mounts:\n- [LABEL=gone, /data]\n", `names file system label "gone"`},
		{"empty mount", "mounts:\n- []\n", "mounts[0] is empty"},
		{"file system without device", "fs_setup:\n- filesystem: ext4\n", "file system 0 has no device"},
		{"partition as a string of digits", "fs_setup:\n- {device: /dev/vdb, partition: \"1\", filesystem: ext4}\n",
			`fs_setup[0]: partition "1": cloud-init's schema takes auto, any or none`},
		{"partition as a number", "fs_setup:\n- {device: /dev/vdb, partition: 1, filesystem: ext4}\n",
			`fs_setup[0]: partition 1: cloud-init's schema takes auto, any or none`},
		{"dotted path without an alias", "fs_setup:\n- {device: /dev/vdb.1, filesystem: ext4}\n",
			`fs_setup[0]: device "/dev/vdb.1": cloud-init splits it into /dev/vdb and partition "1", finds no device_aliases entry`},
		{"path with a dot of its own", "fs_setup:\n- {device: /dev/disk/by-path/pci-0000:00:05.0, filesystem: ext4}\n",
			`finds no device_aliases entry for /dev/disk/by-path/pci-0000:00:05`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := parseCloudConfig([]byte(minimal("", "") + tc.extra))
			if err == nil {
				err = b.checkStatic()
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error carries the password: %v", err)
			}
		})
	}
	// A disabled ntp module may list servers it ignores; a labelled file system
	// the data creates may be mounted.
	b, err := parseCloudConfig([]byte(minimal("", "") + "ntp:\n  enabled: false\n  servers: [\"a b\"]\nfs_setup:\n- {device: /dev/vdb, filesystem: ext4, label: d}\nmounts:\n- [LABEL=d, /d]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.checkStatic(); err != nil {
		t.Errorf("checkStatic: %v", err)
	}
}

// Broken OS setup in Ignition fails the boot.
func TestCheckOSSetupIgnition(t *testing.T) {
	t.Parallel()
	unit := func(c *igntypes.Config, name string) *igntypes.Unit {
		for i := range c.Systemd.Units {
			if c.Systemd.Units[i].Name == name {
				return &c.Systemd.Units[i]
			}
		}
		t.Fatalf("no unit %s", name)
		return nil
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*igntypes.Config)
		wantErr string
	}{
		{"boot commands not ordered first", func(c *igntypes.Config) {
			u := unit(c, "capk3s-bootcmd.service")
			*u.Contents = strings.ReplaceAll(*u.Contents, "Before=capk3s-bootstrap.service\n", "")
		}, "boot commands are not ordered before the k3s install"},
		{"mount unit misnamed", func(c *igntypes.Config) { unit(c, "srv-x\\x2dy.mount").Name = "srv-x-y.mount" },
			"systemd only loads it as srv-x\\x2dy.mount"},
		{"mount of a label no file system has", func(c *igntypes.Config) { *c.Storage.Filesystems[0].Label = "other" },
			`names file system label "data"`},
		{"empty NTP servers", func(c *igntypes.Config) {
			for i := range c.Storage.Files {
				if strings.HasPrefix(c.Storage.Files[i].Path, timesyncdDropIns) {
					c.Storage.Files[i].Contents.Source = ptr.To("data:,%5BTime%5D%0ANTP%3D%0A")
				}
			}
		}, "sets NTP= to no server at all"},
		{"password not a hash", func(c *igntypes.Config) { c.Passwd.Users[0].PasswordHash = ptr.To("hunter2") },
			"user ops: the password is not a crypt(3) hash"},
		// Ignition's own parser refuses this one before the check.
		{"two users of one name", func(c *igntypes.Config) { c.Passwd.Users[1].Name = "ops" }, "duplicate entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var cfg igntypes.Config
			if err := json.Unmarshal(mustRender(t, osSetupInput(bootstrapv1.Ignition)), &cfg); err != nil {
				t.Fatal(err)
			}
			tc.mutate(&cfg)
			raw, err := json.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			b, err := readBootData(raw, "ignition")
			if err == nil {
				err = b.checkStatic()
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
