package sim

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// osSetup is what the machine does to its operating system before k3s, read from
// either format: cloud-init's bootcmd, ntp, users, disk_setup, fs_setup and mounts,
// or Ignition's boot-commands unit, timesyncd drop-in, passwd, storage and mount
// units.
type osSetup struct {
	bootCommands []string
	// bootFirst says that the boot commands run before the k3s install: always
	// with cloud-init (bootcmd is an earlier stage than runcmd), in Ignition only
	// when the units are ordered so.
	bootFirst bool
	// ntp is nil when the data leaves time alone.
	ntp         *ntpSetup
	users       []osUser
	partitioned []string
	filesystems []osFilesystem
	mounts      []osMount
}

type ntpSetup struct {
	enabled bool
	servers []string
}

type osUser struct {
	name, passwd string
}

type osFilesystem struct {
	device, partition, label string
}

type osMount struct {
	device, where string
}

// cryptHash is how /etc/shadow holds a password: anything else in cloud-init's
// passwd or Ignition's passwordHash locks the user out for good.
var cryptHash = regexp.MustCompile(`^\$[0-9a-z]+\$[^\s:]+$`)

// checkOSSetup checks the OS setup as the machine would live with it: boot
// commands before the install and not installing k3s themselves, users with
// unique names and usable hashes, time servers when time sync is on, and mounts
// of devices the machine has or file systems the data creates.
func (b *bootData) checkOSSetup() error {
	o := b.os
	if len(o.bootCommands) > 0 && !o.bootFirst {
		return errors.New("boot commands are not ordered before the k3s install")
	}
	for i, c := range o.bootCommands {
		if _, ok, _ := parseInstallCommand(c); ok {
			return fmt.Errorf("boot command %d installs k3s: it would run on every boot", i)
		}
	}
	seen := map[string]bool{}
	for i, u := range o.users {
		if u.name == "" {
			return fmt.Errorf("user %d has no name: the account would not be created", i)
		}
		if seen[u.name] {
			return fmt.Errorf("user %s is created twice", u.name)
		}
		seen[u.name] = true
		// The value stays out of the message.
		if u.passwd != "" && !cryptHash.MatchString(u.passwd) {
			return fmt.Errorf("user %s: the password is not a crypt(3) hash, so no password would ever match it", u.name)
		}
	}
	if n := o.ntp; n != nil && n.enabled {
		for i, s := range n.servers {
			if s == "" || strings.ContainsAny(s, " \t") {
				return fmt.Errorf("ntp server %d %q is not one host name or address", i, s)
			}
		}
	}
	labels := map[string]bool{}
	for i, fs := range o.filesystems {
		if fs.device == "" {
			return fmt.Errorf("file system %d has no device", i)
		}
		if fs.label != "" {
			labels[fs.label] = true
		}
	}
	for i, d := range o.partitioned {
		if d == "" {
			return fmt.Errorf("partition table %d has no device", i)
		}
	}
	for i, m := range o.mounts {
		if m.device == "" {
			return fmt.Errorf("mount %d has no device", i)
		}
		label, byLabel := strings.CutPrefix(m.device, "LABEL=")
		if !byLabel {
			label, byLabel = strings.CutPrefix(m.device, "/dev/disk/by-label/")
		}
		// The simulated image has no labelled file systems of its own.
		if byLabel && !labels[label] {
			return fmt.Errorf("mount %d (%s) names file system label %q, which no file system of the data has", i, m.where, label)
		}
	}
	return nil
}
