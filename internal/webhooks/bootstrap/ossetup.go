package bootstrap

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
)

// loginName is useradd's default NAME_REGEX, with its 32-character limit: any
// other name fails on the machine, after admission, in both formats.
var loginName = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,30}[a-z0-9_$-]?$`)

// validateOSSetup checks bootCommands, ntp, users, diskSetup and mounts. With
// format ignition it adds the renderer's own list of what Ignition cannot say, so
// admission and rendering refuse the same settings.
func validateOSSetup(spec *bootstrapv1.KThreesConfigSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range spec.BootCommands {
		if c == "" {
			errs = append(errs, field.Required(fldPath.Child("bootCommands").Index(i), "a boot command must not be empty"))
		}
	}
	errs = append(errs, validateNTP(spec.NTP, fldPath.Child("ntp"))...)
	errs = append(errs, validateUsers(spec.Users, fldPath.Child("users"))...)
	errs = append(errs, validateDiskSetup(spec.DiskSetup, fldPath.Child("diskSetup"))...)
	mountPoints := map[string]int{}
	for i, m := range spec.Mounts {
		p := fldPath.Child("mounts").Index(i)
		if len(m) == 0 {
			errs = append(errs, field.Required(p, "a mount needs at least its device: [device, mount point, type, options, dump, pass]"))
			continue
		}
		if len(m) > 1 && m[1] != "none" && m[1] != "" {
			if j, dup := mountPoints[m[1]]; dup {
				e := field.Duplicate(p.Index(1), m[1])
				e.Detail = fmt.Sprintf("%s already mounts something here; one mount per mount point", fldPath.Child("mounts").Index(j).Index(1))
				errs = append(errs, e)
			} else {
				mountPoints[m[1]] = i
			}
		}
		for j, f := range m {
			if f == "" {
				errs = append(errs, field.Required(p.Index(j), "an fstab field must not be empty"))
			}
			errs = append(errs, oneLine(f, p.Index(j))...)
		}
	}
	if spec.Format == bootstrapv1.Ignition {
		errs = append(errs, cloudinit.IgnitionOSSetupErrors(spec, fldPath)...)
	}
	return errs
}

func validateNTP(n *bootstrapv1.NTP, fldPath *field.Path) field.ErrorList {
	if n == nil {
		return nil
	}
	var errs field.ErrorList
	for i, s := range n.Servers {
		switch {
		case s == "":
			errs = append(errs, field.Required(fldPath.Child("servers").Index(i), "an NTP server host name or address is required"))
		case strings.IndexFunc(s, unicode.IsSpace) >= 0:
			errs = append(errs, field.Invalid(fldPath.Child("servers").Index(i), s, "must be one host name or address, without spaces: list each server as its own entry"))
		}
	}
	if !ptr.Deref(n.Enabled, true) && len(n.Servers) > 0 {
		errs = append(errs, field.Forbidden(fldPath.Child("servers"), "ntp.enabled is false, so these servers would never be used: remove them or enable ntp"))
	}
	return errs
}

func validateUsers(users []bootstrapv1.User, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	first := map[string]int{}
	for i := range users {
		u := &users[i]
		p := fldPath.Index(i)
		if u.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), "a user needs a login name"))
		} else if !loginName.MatchString(u.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), u.Name,
				"must be a login name useradd accepts: up to 32 lower-case letters, digits, '_' or '-', starting with a letter or '_'"))
		} else if j, dup := first[u.Name]; dup {
			d := field.Duplicate(p.Child("name"), u.Name)
			d.Detail = fmt.Sprintf("%s already creates this user; list each user once", fldPath.Index(j).Child("name"))
			errs = append(errs, d)
		} else {
			first[u.Name] = i
		}
		for _, f := range []struct {
			name, v string
		}{{"gecos", u.Gecos}, {"groups", u.Groups}, {"homeDir", u.HomeDir}, {"shell", u.Shell}, {"primaryGroup", u.PrimaryGroup}, {"sudo", u.Sudo}} {
			errs = append(errs, oneLine(f.v, p.Child(f.name))...)
		}
		for j, k := range u.SSHAuthorizedKeys {
			if k == "" {
				errs = append(errs, field.Required(p.Child("sshAuthorizedKeys").Index(j), "an SSH public key is required"))
			}
			errs = append(errs, oneLine(k, p.Child("sshAuthorizedKeys").Index(j))...)
		}
		if u.PasswdFrom != nil {
			sp := p.Child("passwdFrom", "secret")
			errs = append(errs, validateSecretName(u.PasswdFrom.Secret.Name, sp.Child("name"))...)
			if key := u.PasswdFrom.Secret.Key; key == "" {
				errs = append(errs, field.Required(sp.Child("key"), "the key of the Secret's data that holds the password hash is required"))
			} else if msgs := validation.IsConfigMapKey(key); len(msgs) > 0 {
				// The key is not echoed: a password pasted here by mistake must not land in an error.
				errs = append(errs, field.Invalid(sp.Child("key"), field.OmitValueType{}, "must be a valid Secret data key: "+strings.Join(msgs, "; ")))
			}
		}
	}
	return errs
}

func validateDiskSetup(d *bootstrapv1.DiskSetup, fldPath *field.Path) field.ErrorList {
	if d == nil {
		return nil
	}
	var errs field.ErrorList
	devices := map[string]int{}
	for i := range d.Partitions {
		part := &d.Partitions[i]
		p := fldPath.Child("partitions").Index(i)
		if part.Device == "" {
			errs = append(errs, field.Required(p.Child("device"), "the device to partition, e.g. /dev/sdb, is required"))
		} else if j, dup := devices[part.Device]; dup {
			e := field.Duplicate(p.Child("device"), part.Device)
			e.Detail = fmt.Sprintf("%s already lays out this device; one partition table per device", fldPath.Child("partitions").Index(j).Child("device"))
			errs = append(errs, e)
		} else {
			devices[part.Device] = i
		}
		if part.Layout != nil && len(part.DiskLayout) > 0 {
			errs = append(errs, field.Forbidden(p.Child("diskLayout"), "set either layout or diskLayout, not both"))
		}
		total := int32(0)
		for j, ps := range part.DiskLayout {
			total += ps.Percentage
			if err := cloudinit.CheckPartitionType(part.TableType, ps.PartitionType); err != nil {
				errs = append(errs, field.Invalid(p.Child("diskLayout").Index(j).Child("partitionType"), ps.PartitionType, err.Error()))
			}
		}
		if total > 100 {
			errs = append(errs, field.Invalid(p.Child("diskLayout"), total, "the partitions' percentages add up to more than 100"))
		}
	}
	for i := range d.Filesystems {
		fs := &d.Filesystems[i]
		p := fldPath.Child("filesystems").Index(i)
		if fs.Device == "" {
			errs = append(errs, field.Required(p.Child("device"), "the device to format, e.g. /dev/sdb, is required"))
		}
		if fs.Filesystem == "" {
			errs = append(errs, field.Required(p.Child("filesystem"), "the file system type, e.g. ext4, is required"))
		}
		// cloud-init's schema takes a partition number or auto, any or none.
		if err := cloudinit.CheckFilesystemPartition(fs.Device, fs.Partition); err != nil {
			errs = append(errs, field.Invalid(p.Child("partition"), fs.Partition, err.Error()))
		}
	}
	return errs
}

// oneLine refuses control characters (a newline above all) in a setting that ends
// up as one line of /etc/passwd, sudoers, authorized_keys or a unit file.
func oneLine(s string, fldPath *field.Path) field.ErrorList {
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return field.ErrorList{field.Invalid(fldPath, s, "must be one line, without control characters such as newlines or tabs")}
	}
	return nil
}
