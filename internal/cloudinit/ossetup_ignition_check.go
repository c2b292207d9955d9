package cloudinit

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// notAbsoluteDevice is why Ignition refuses cloud-init's short device names.
const notAbsoluteDevice = "Ignition takes a device path such as /dev/sdb, not cloud-init's short device names (ephemeral0, sdb, swap)"

// ignitionFilesystems are the formats Ignition 3.4 creates.
var ignitionFilesystems = []string{"ext4", "btrfs", "xfs", "vfat", "swap"}

// IgnitionOSSetupErrors lists the OS setup settings of spec that Ignition has no
// equivalent for, each with its field under fldPath. It is the one list: the
// validating webhook refuses these for format ignition, and Render refuses them
// too, so a setting is never dropped on the way to an Ignition machine.
func IgnitionOSSetupErrors(spec *bootstrapv1.KThreesConfigSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range spec.Users {
		u := &spec.Users[i]
		p := fldPath.Child("users").Index(i)
		if u.Sudo != "" {
			errs = append(errs, field.Forbidden(p.Child("sudo"),
				"Ignition has no sudo setting: add the user to a group that may use sudo (groups, e.g. wheel) or write a file in /etc/sudoers.d with files"))
		}
		if u.Inactive != nil && *u.Inactive {
			errs = append(errs, field.Forbidden(p.Child("inactive"), "Ignition cannot create a disabled account"))
		}
		if u.LockPassword != nil && *u.LockPassword != (u.PasswdFrom == nil) {
			errs = append(errs, field.Forbidden(p.Child("lockPassword"),
				"Ignition locks exactly the accounts it is given no password hash for: leave lockPassword unset, or set passwdFrom to unlock"))
		}
	}
	if d := spec.DiskSetup; d != nil {
		for i := range d.Partitions {
			part := &d.Partitions[i]
			p := fldPath.Child("diskSetup", "partitions").Index(i)
			if len(part.DiskLayout) > 0 {
				errs = append(errs, field.Forbidden(p.Child("diskLayout"),
					"Ignition sizes partitions in MiB, not in percent of the disk: use layout true for one partition, or partition in the machine image"))
			}
			if part.Device != "" && !path.IsAbs(part.Device) {
				errs = append(errs, field.Invalid(p.Child("device"), part.Device, notAbsoluteDevice))
			}
			if (part.Layout != nil && *part.Layout || len(part.DiskLayout) > 0) && part.TableType != "gpt" {
				errs = append(errs, field.Invalid(p.Child("tableType"), part.TableType,
					"Ignition writes GPT partition tables only: set tableType gpt (cloud-init's default is mbr)"))
			}
		}
		for i := range d.Filesystems {
			fs := &d.Filesystems[i]
			p := fldPath.Child("diskSetup", "filesystems").Index(i)
			if fs.Device != "" && !path.IsAbs(fs.Device) {
				errs = append(errs, field.Invalid(p.Child("device"), fs.Device, notAbsoluteDevice))
			}
			if _, err := ignitionFilesystemDevice(fs); err != nil {
				errs = append(errs, field.Invalid(p.Child("partition"), fs.Partition, err.Error()))
			}
			if fs.ReplaceFS != "" {
				errs = append(errs, field.Forbidden(p.Child("replaceFS"), "replaceFS is cloud-init's own directive; Ignition has none"))
			}
			if fs.Filesystem != "" && !slices.Contains(ignitionFilesystems, fs.Filesystem) {
				errs = append(errs, field.NotSupported(p.Child("filesystem"), fs.Filesystem, ignitionFilesystems))
			}
		}
	}
	for i, m := range spec.Mounts {
		if _, err := ignitionMount(m); err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("mounts").Index(i), []string(m), err.Error()))
		}
	}
	return errs
}

// ignitionFilesystemDevice is the block device Ignition formats: the device
// itself, or with a partition number the kernel's name for that partition
// (/dev/sdb1, /dev/nvme0n1p1). cloud-init's "auto" and "any" search the disk at
// boot, which Ignition cannot.
func ignitionFilesystemDevice(fs *bootstrapv1.Filesystem) (string, error) {
	switch fs.Partition {
	case "", "none":
		return fs.Device, nil
	}
	n, err := strconv.Atoi(fs.Partition)
	if err != nil || n < 1 {
		return "", fmt.Errorf("a partition number or none is what Ignition takes, not cloud-init's %q", fs.Partition)
	}
	return partitionDevice(fs.Device, n), nil
}

// partitionDevice follows the kernel's naming: a "p" separates the number from
// a device name that ends in a digit.
func partitionDevice(device string, n int) string {
	if device == "" {
		return ""
	}
	if last := device[len(device)-1]; last >= '0' && last <= '9' {
		return device + "p" + strconv.Itoa(n)
	}
	return device + strconv.Itoa(n)
}

// mountUnit is one mounts entry as the systemd mount unit that Ignition enables.
type mountUnit struct {
	what, where, fsType, options string
}

// defaultMountOptions keeps a missing disk from failing the boot, as cloud-init
// makes its mounts nofail.
const defaultMountOptions = "defaults,nofail"

// ignitionMount reads an fstab-style entry for a mount unit. cloud-init guesses
// missing mount points and resolves short names (ephemeral0, sdb); systemd takes
// absolute paths only.
func ignitionMount(m bootstrapv1.MountPoints) (mountUnit, error) {
	if len(m) > 6 {
		return mountUnit{}, fmt.Errorf("an fstab entry has at most 6 fields, not %d", len(m))
	}
	if len(m) < 2 {
		return mountUnit{}, errors.New("the mount point (second field) is required by Ignition; cloud-init's guess from the device name is not available")
	}
	u := mountUnit{what: m[0], where: m[1], options: defaultMountOptions}
	switch {
	case strings.HasPrefix(u.what, "LABEL="):
		u.what = "/dev/disk/by-label/" + strings.TrimPrefix(u.what, "LABEL=")
	case strings.HasPrefix(u.what, "UUID="):
		u.what = "/dev/disk/by-uuid/" + strings.TrimPrefix(u.what, "UUID=")
	case !path.IsAbs(u.what):
		return u, fmt.Errorf("device %q: Ignition's mount units take an absolute path, LABEL=<label> or UUID=<uuid>, not cloud-init's short device names", m[0])
	}
	if !path.IsAbs(u.where) || path.Clean(u.where) != u.where || u.where == "/" {
		return u, fmt.Errorf("mount point %q must be a clean absolute path other than /", m[1])
	}
	if len(m) > 2 && m[2] != "auto" {
		u.fsType = m[2]
	}
	if u.fsType == "swap" {
		return u, errors.New("swap: Ignition mounts file systems only; enable swap with a command")
	}
	if len(m) > 3 {
		u.options = m[3]
	}
	for i := 4; i < len(m); i++ {
		if m[i] != "0" {
			return u, fmt.Errorf("field %d (%s) must be 0: systemd mount units neither dump nor check file systems at boot", i+1, [...]string{4: "dump", 5: "pass"}[i])
		}
	}
	return u, nil
}
