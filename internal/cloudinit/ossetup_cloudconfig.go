package cloudinit

import (
	"strconv"

	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// cloud-init's keys for the OS setup, each in its own module: bootcmd runs
// first, on every boot; disk_setup, fs_setup and mounts in the init stage;
// users and ntp before runcmd, which installs k3s.
type ccOSSetup struct {
	BootCmd   []string          `json:"bootcmd,omitempty"`
	NTP       *ccNTP            `json:"ntp,omitempty"`
	Users     []ccUser          `json:"users,omitempty"`
	DiskSetup map[string]ccDisk `json:"disk_setup,omitempty"`
	FSSetup   []ccFilesystem    `json:"fs_setup,omitempty"`
	Mounts    [][]string        `json:"mounts,omitempty"`
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
	out := ccOSSetup{BootCmd: s.bootCommands, Mounts: s.mounts}
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
		device, partition := ccFilesystemDevice(fs)
		out.FSSetup = append(out.FSSetup, ccFilesystem{
			Label: fs.Label, Filesystem: fs.Filesystem, Device: device, Partition: partition,
			Overwrite: fs.Overwrite, ReplaceFS: fs.ReplaceFS, ExtraOpts: fs.ExtraOpts,
		})
	}
	return out
}

// ccFilesystemDevice is fs_setup's device and partition. cloud-init's schema
// takes partition as auto, any or none, or (from 23.1 on) an integer; 22.4's
// refuses integers too. Both take, and split at the last dot into device and
// partition, the "<device>.<number>" form, so a number goes there.
// CheckFilesystemPartition refused what that would misread.
func ccFilesystemDevice(fs bootstrapv1.Filesystem) (device, partition string) {
	if numericID(fs.Partition) {
		return fs.Device + "." + fs.Partition, ""
	}
	return fs.Device, fs.Partition
}

// ccLayout is disk_setup's layout: the bool as given, or each partition's
// percentage, paired with a type code unless it is the table's Linux default.
func ccLayout(p bootstrapv1.Partition) any {
	if len(p.DiskLayout) == 0 {
		if p.Layout == nil {
			return nil
		}
		return *p.Layout
	}
	linux, _ := partitionTypeCode(p.TableType, "")
	layout := make([]any, 0, len(p.DiskLayout))
	for _, ps := range p.DiskLayout {
		// newPlan checked every type.
		code, _ := partitionTypeCode(p.TableType, ps.PartitionType)
		if code == linux {
			layout = append(layout, ps.Percentage)
			continue
		}
		layout = append(layout, []any{ps.Percentage, ccTypeCode(p.TableType, code)})
	}
	return layout
}

// ccTypeCode is a partition type code as cloud-init's schema wants it: an
// integer (22.4 takes nothing else) whenever cloud-init then hands sfdisk or
// sgdisk the same code. It formats the value with %s; sfdisk reads MBR codes
// as hex, where leading zeros do not count ("07" is 7); for GPT it pads the
// digits on the right to four ("82" becomes 8200), so a leading zero would be
// lost ("0700" is not 700). Codes with hex letters, "0700" and GUIDs cannot be
// integers and stay strings: 25.1's schema takes them, 22.4's only warns, and
// both versions partition as asked.
func ccTypeCode(table, code string) any {
	n, err := strconv.Atoi(code)
	if err != nil || !numericID(code) || (table == "gpt" && strconv.Itoa(n) != code) {
		return code
	}
	return n
}
