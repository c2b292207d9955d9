package cloudinit

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// osSetup is the part of the plan that prepares the operating system: what runs
// first on every boot, time, accounts, disks and mounts. Both encoders carry all
// of it; Ignition refuses, before encoding, what it cannot say (ossetup_ignition_check.go).
type osSetup struct {
	bootCommands []string
	ntp          *bootstrapv1.NTP
	users        []user
	partitions   []bootstrapv1.Partition
	filesystems  []bootstrapv1.Filesystem
	mounts       [][]string
}

// user is a spec user with its password resolved.
type user struct {
	bootstrapv1.User
	// passwordHash is the crypt(3) hash read from passwdFrom's Secret, "" without.
	passwordHash string
	// lockPassword is spec's lockPassword with its default: locked unless a
	// password is given. Rendered explicitly so that cloud-init's own default
	// (locked) never makes a given password useless.
	lockPassword bool
}

// cryptHash is the shape of a crypt(3) hash as /etc/shadow holds it
// ("$id$[params$]salt$hash"): one line, no ':' (the shadow field separator).
var cryptHash = regexp.MustCompile(`^\$[0-9a-z]+\$[^\s:]+$`)

// newOSSetup checks the OS setup and resolves the users' passwords from
// in.UserPasswords. Errors name the field and never carry a password.
func newOSSetup(in Input) (osSetup, error) {
	s := in.Spec
	setup := osSetup{bootCommands: s.BootCommands, ntp: s.NTP, mounts: mountsOf(s.Mounts)}
	if err := checkCommands("bootCommands", s.BootCommands); err != nil {
		return setup, err
	}
	for i, c := range s.BootCommands {
		if c == "" {
			return setup, fmt.Errorf("spec.bootCommands[%d] is empty", i)
		}
	}
	if s.NTP != nil {
		for i, srv := range s.NTP.Servers {
			if err := checkLine(fmt.Sprintf("spec.ntp.servers[%d]", i), srv, true); err != nil {
				return setup, err
			}
			if strings.ContainsAny(srv, " \t") {
				return setup, fmt.Errorf("spec.ntp.servers[%d] %q has a space: one host name or address per entry", i, srv)
			}
		}
		if s.NTP.Enabled != nil && !*s.NTP.Enabled && len(s.NTP.Servers) > 0 {
			return setup, errors.New("spec.ntp.servers are set but spec.ntp.enabled is false: they would not be used")
		}
	}
	users, err := resolveUsers(s.Users, in.UserPasswords)
	if err != nil {
		return setup, err
	}
	setup.users = users
	if d := s.DiskSetup; d != nil {
		if err := checkDiskSetup(d); err != nil {
			return setup, err
		}
		setup.partitions, setup.filesystems = d.Partitions, d.Filesystems
	}
	mountPoints := map[string]int{}
	for i, m := range s.Mounts {
		if len(m) == 0 || m[0] == "" {
			return setup, fmt.Errorf("spec.mounts[%d] has no device: each entry starts with the device to mount", i)
		}
		if len(m) > 1 && m[1] != "none" {
			if j, dup := mountPoints[m[1]]; dup {
				return setup, fmt.Errorf("spec.mounts[%d] mounts on %s as spec.mounts[%d] does: one mount per mount point", i, m[1], j)
			}
			mountPoints[m[1]] = i
		}
		for j, f := range m {
			if err := checkLine(fmt.Sprintf("spec.mounts[%d][%d]", i, j), f, true); err != nil {
				return setup, err
			}
		}
	}
	return setup, nil
}

func mountsOf(ms []bootstrapv1.MountPoints) [][]string {
	out := make([][]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, []string(m))
	}
	return out
}

// resolveUsers checks the users and pairs each with its password hash.
func resolveUsers(spec []bootstrapv1.User, passwords map[string]string) ([]user, error) {
	users := make([]user, 0, len(spec))
	seen := map[string]int{}
	for i, u := range spec {
		p := fmt.Sprintf("spec.users[%d]", i)
		if u.Name == "" {
			return nil, fmt.Errorf("%s.name is empty", p)
		}
		if j, dup := seen[u.Name]; dup {
			return nil, fmt.Errorf("%s.name %q is also spec.users[%d]: each user is listed once", p, u.Name, j)
		}
		seen[u.Name] = i
		for _, f := range []struct{ field, v string }{
			{"name", u.Name}, {"gecos", u.Gecos}, {"groups", u.Groups}, {"homeDir", u.HomeDir},
			{"shell", u.Shell}, {"primaryGroup", u.PrimaryGroup}, {"sudo", u.Sudo},
		} {
			if err := checkLine(p+"."+f.field, f.v, false); err != nil {
				return nil, err
			}
		}
		for j, k := range u.SSHAuthorizedKeys {
			if err := checkLine(fmt.Sprintf("%s.sshAuthorizedKeys[%d]", p, j), k, true); err != nil {
				return nil, err
			}
		}
		r := user{User: u}
		if u.PasswdFrom != nil {
			hash, ok := passwords[u.Name]
			if !ok {
				return nil, fmt.Errorf("%s.passwdFrom: the password of user %q was not resolved from Secret %s", p, u.Name, u.PasswdFrom.Secret.Name)
			}
			// Secrets made from files (kubectl --from-file) often end in a newline.
			hash = strings.TrimRight(hash, "\r\n")
			if !cryptHash.MatchString(hash) {
				// The value stays out of the message: it may be a clear-text password.
				return nil, fmt.Errorf("%s.passwdFrom: key %q of Secret %s is not a crypt(3) password hash such as $6$... (make one with `mkpasswd -m sha-512`); clear-text passwords are not put into bootstrap data",
					p, u.PasswdFrom.Secret.Key, u.PasswdFrom.Secret.Name)
			}
			r.passwordHash = hash
		}
		r.lockPassword = r.passwordHash == ""
		if u.LockPassword != nil {
			r.lockPassword = *u.LockPassword
		}
		users = append(users, r)
	}
	return users, nil
}

func checkDiskSetup(d *bootstrapv1.DiskSetup) error {
	devices := map[string]int{}
	for i, part := range d.Partitions {
		p := fmt.Sprintf("spec.diskSetup.partitions[%d]", i)
		if part.Device == "" {
			return fmt.Errorf("%s.device is empty", p)
		}
		// disk_setup is a map by device: a second entry would silently replace the first.
		if j, dup := devices[part.Device]; dup {
			return fmt.Errorf("%s.device %q is also spec.diskSetup.partitions[%d]: one partition table per device", p, part.Device, j)
		}
		devices[part.Device] = i
		if err := checkLine(p+".device", part.Device, true); err != nil {
			return err
		}
		if part.Layout != nil && len(part.DiskLayout) > 0 {
			return fmt.Errorf("%s: set either layout or diskLayout, not both", p)
		}
		total := int32(0)
		for j, ps := range part.DiskLayout {
			if ps.Percentage < 1 || ps.Percentage > 100 {
				return fmt.Errorf("%s.diskLayout[%d].percentage %d is not between 1 and 100", p, j, ps.Percentage)
			}
			if _, err := partitionTypeCode(part.TableType, ps.PartitionType); err != nil {
				return fmt.Errorf("%s.diskLayout[%d].partitionType: %w", p, j, err)
			}
			total += ps.Percentage
		}
		if total > 100 {
			return fmt.Errorf("%s.diskLayout takes %d%% of the disk, more than 100%%", p, total)
		}
	}
	for i, fs := range d.Filesystems {
		p := fmt.Sprintf("spec.diskSetup.filesystems[%d]", i)
		if fs.Device == "" {
			return fmt.Errorf("%s.device is empty", p)
		}
		if fs.Filesystem == "" {
			return fmt.Errorf("%s.filesystem is empty", p)
		}
		for _, f := range []struct{ field, v string }{
			{"device", fs.Device}, {"filesystem", fs.Filesystem}, {"label", fs.Label}, {"partition", fs.Partition}, {"replaceFS", fs.ReplaceFS},
		} {
			if err := checkLine(p+"."+f.field, f.v, false); err != nil {
				return err
			}
		}
		if err := CheckFilesystemPartition(fs.Device, fs.Partition); err != nil {
			return fmt.Errorf("%s.partition: %w", p, err)
		}
		for j, o := range fs.ExtraOpts {
			if err := checkLine(fmt.Sprintf("%s.extraOpts[%d]", p, j), o, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// partitionTypeCode is the code cloud-init hands to sfdisk (MBR) or sgdisk (GPT)
// for a diskLayout partition type; a GUID passes through on GPT only.
func partitionTypeCode(table, name string) (string, error) {
	gpt := table == "gpt"
	codes := map[string][2]string{ // name: {mbr, gpt}
		"":              {"83", "8300"},
		"Linux":         {"83", "8300"},
		"LinuxSwap":     {"82", "8200"},
		"LinuxRAID":     {"fd", "fd00"},
		"LVM":           {"8e", "8e00"},
		"Fat32":         {"0c", "0700"},
		"NTFS":          {"07", "0700"},
		"LinuxExtended": {"85", ""},
	}
	if c, ok := codes[name]; ok {
		if gpt {
			if c[1] == "" {
				return "", fmt.Errorf("%s partitions exist on MBR tables only", name)
			}
			return c[1], nil
		}
		return c[0], nil
	}
	if gptGUID.MatchString(name) {
		if !gpt {
			return "", fmt.Errorf("%q is a GPT type GUID, but the table is MBR: set tableType gpt", name)
		}
		return name, nil
	}
	return "", fmt.Errorf("%q is not Linux, LinuxSwap, LinuxRAID, LVM, Fat32, NTFS, LinuxExtended or a GPT type GUID", name)
}

var gptGUID = regexp.MustCompile(`^[0-9A-Fa-f]{8}(-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}$`)

// checkLine refuses a one-line setting that would not reach the machine as
// written: across YAML (see carriable, misreadByYAML11), or as one line of
// /etc/passwd, fstab or a unit file. Empty is allowed unless required.
func checkLine(field, s string, required bool) error {
	switch {
	case s == "" && required:
		return fmt.Errorf("%s is empty", field)
	case !carriable(s) || strings.ContainsAny(s, "\n\r"):
		return fmt.Errorf("%s %s, on one line", field, notCarriable)
	case misreadByYAML11(s):
		return fmt.Errorf("%s %q would reach cloud-init as a YAML number, boolean or null", field, s)
	}
	return nil
}

// CheckFilesystemPartition says whether cloud-init reads a file system's
// partition as one: a partition number (without leading zeros, which cloud-init
// would paste into the device name as they are), or auto, any or none, the
// only strings its schema takes. A number travels in the device name as
// "<device>.<number>" (see ccFilesystemDevice), so a cloud-init short name that
// already names a partition that way cannot take a second one. For the webhook.
func CheckFilesystemPartition(device, partition string) error {
	switch partition {
	case "", "auto", "any", "none":
		return nil
	}
	if !numericID(partition) || partition[0] == '0' {
		return fmt.Errorf("%q is not a partition number or auto, any or none", partition)
	}
	// Absolute paths are left alone: by-path names such as pci-0000:00:05.0
	// name whole disks, and cloud-init splits at the last dot, which comes after.
	if i := strings.LastIndex(device, "."); i >= 0 && !path.IsAbs(device) && numericID(device[i+1:]) {
		return fmt.Errorf("device %q already names partition %s in cloud-init's <device>.<partition> form: set device %s, or leave partition empty",
			device, device[i+1:], device[:i])
	}
	return nil
}

// CheckPartitionType says whether a diskLayout partition type exists on a table
// type, by the renderer's own table, for the webhook.
func CheckPartitionType(tableType, partitionType string) error {
	_, err := partitionTypeCode(tableType, partitionType)
	return err
}
