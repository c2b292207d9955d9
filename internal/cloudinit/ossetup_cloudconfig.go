package cloudinit

import (
	"k8s.io/utils/ptr"
)

// cloud-init's keys for the OS setup, each in its own module: bootcmd runs
// first, on every boot; disk_setup, fs_setup and mounts in the init stage;
// users and ntp before runcmd, which installs k3s. device_aliases serves
// fs_setup (ccFilesystemDevice).
type ccOSSetup struct {
	BootCmd []string `json:"bootcmd,omitempty"`
	NTP     *ccNTP   `json:"ntp,omitempty"`
	// Groups are created before Users: the users' primary groups (primaryGroups).
	Groups        []string          `json:"groups,omitempty"`
	Users         []ccUser          `json:"users,omitempty"`
	DeviceAliases map[string]string `json:"device_aliases,omitempty"`
	DiskSetup     map[string]ccDisk `json:"disk_setup,omitempty"`
	FSSetup       []ccFilesystem    `json:"fs_setup,omitempty"`
	Mounts        [][]string        `json:"mounts,omitempty"`
}

type ccNTP struct {
	Enabled *bool    `json:"enabled,omitempty"`
	Servers []string `json:"servers,omitempty"`
}

type ccUser struct {
	Name         string `json:"name"`
	Gecos        string `json:"gecos,omitempty"`
	Groups       string `json:"groups,omitempty"`
	HomeDir      string `json:"homedir,omitempty"`
	Shell        string `json:"shell,omitempty"`
	PrimaryGroup string `json:"primary_group,omitempty"`
	// Passwd is a crypt(3) hash: cloud-init's passwd never takes clear text.
	Passwd     string `json:"passwd,omitempty"`
	LockPasswd bool   `json:"lock_passwd"`
	// ExpireDate disables an inactive account from its creation on: cloud-init's
	// own "inactive" only sets useradd's days-after-expiry, which disables nothing.
	ExpireDate        string   `json:"expiredate,omitempty"`
	Sudo              string   `json:"sudo,omitempty"`
	SSHAuthorizedKeys []string `json:"ssh_authorized_keys,omitempty"`
}

// inactiveExpireDate is a day long past: the account is expired, so disabled.
const inactiveExpireDate = "1970-01-02"

type ccDisk struct {
	TableType string `json:"table_type,omitempty"`
	// Layout is a bool (one partition, or none) or a list of percentages, each
	// alone or with its type code.
	Layout    any   `json:"layout,omitempty"`
	Overwrite *bool `json:"overwrite,omitempty"`
}

type ccFilesystem struct {
	Label      string   `json:"label,omitempty"`
	Filesystem string   `json:"filesystem"`
	Device     string   `json:"device"`
	Partition  string   `json:"partition,omitempty"`
	Overwrite  *bool    `json:"overwrite,omitempty"`
	ReplaceFS  string   `json:"replace_fs,omitempty"`
	ExtraOpts  []string `json:"extra_opts,omitempty"`
}

// cloudConfigOS writes the plan's OS setup in cloud-init's keys.
func cloudConfigOS(s osSetup) ccOSSetup {
	out := ccOSSetup{BootCmd: s.bootCommands, Mounts: s.mounts, Groups: primaryGroups(s.users)}
	if s.ntp != nil {
		out.NTP = &ccNTP{Enabled: s.ntp.Enabled, Servers: s.ntp.Servers}
	}
	for _, u := range s.users {
		c := ccUser{
			Name: u.Name, Gecos: u.Gecos, Groups: u.Groups, HomeDir: u.HomeDir, Shell: u.Shell,
			PrimaryGroup: u.PrimaryGroup, Passwd: u.passwordHash, LockPasswd: u.lockPassword,
			Sudo: u.Sudo, SSHAuthorizedKeys: u.SSHAuthorizedKeys,
		}
		if ptr.Deref(u.Inactive, false) {
			c.ExpireDate = inactiveExpireDate
		}
		out.Users = append(out.Users, c)
	}
	for _, p := range s.partitions {
		if out.DiskSetup == nil {
			out.DiskSetup = map[string]ccDisk{}
		}
		out.DiskSetup[p.Device] = ccDisk{TableType: p.TableType, Layout: ccLayout(p), Overwrite: p.Overwrite}
	}
	for _, fs := range s.filesystems {
		device, partition, alias := ccFilesystemDevice(fs)
		if alias {
			if out.DeviceAliases == nil {
				out.DeviceAliases = map[string]string{}
			}
			out.DeviceAliases[fs.Device] = fs.Device
		}
		out.FSSetup = append(out.FSSetup, ccFilesystem{
			Label: fs.Label, Filesystem: fs.Filesystem, Device: device, Partition: partition,
			Overwrite: fs.Overwrite, ReplaceFS: fs.ReplaceFS, ExtraOpts: fs.ExtraOpts,
		})
	}
	return out
}
