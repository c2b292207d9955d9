package sim

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/utils/ptr"
)

// cloudConfigOS is the part of cloud-init's schema for the OS setup, read as
// cloud-init reads it: loose where cloud-init is (a user may be a bare name, a
// fstab field a number), so that the checks judge what the machine would do.
type cloudConfigOS struct {
	BootCmd []any `json:"bootcmd"`
	NTP     *struct {
		Enabled *bool    `json:"enabled"`
		Servers []string `json:"servers"`
		Pools   []string `json:"pools"`
	} `json:"ntp"`
	Users []any `json:"users"`
	// Groups are created before users (cloudinit_groups.go).
	Groups    []any          `json:"groups"`
	DiskSetup map[string]any `json:"disk_setup"`
	// DeviceAliases name devices for disk_setup and fs_setup.
	DeviceAliases map[string]string `json:"device_aliases"`
	FSSetup       []map[string]any  `json:"fs_setup"`
	Mounts        [][]any           `json:"mounts"`
}

// osSetup reads the OS keys into what the machine would do. cloud-init runs
// bootcmd in its first stage and runcmd in its last, so boot commands always
// come first.
func (c cloudConfigOS) osSetup() (osSetup, error) {
	o := osSetup{bootFirst: true}
	for i, cmd := range c.BootCmd {
		s, ok := cmd.(string)
		if !ok {
			return o, fmt.Errorf("bootcmd[%d] is %T, not a shell command", i, cmd)
		}
		o.bootCommands = append(o.bootCommands, s)
	}
	if c.NTP != nil {
		// cloud-init's ntp module is on once the key is there, unless enabled: false.
		o.ntp = &ntpSetup{enabled: ptr.Deref(c.NTP.Enabled, true), servers: slices.Concat(c.NTP.Servers, c.NTP.Pools)}
	}
	for i, u := range c.Users {
		switch u := u.(type) {
		case string:
			o.users = append(o.users, osUser{name: u})
		case map[string]any:
			name, _ := u["name"].(string)
			passwd, _ := u["passwd"].(string)
			o.users = append(o.users, osUser{name: name, passwd: passwd})
		default:
			return o, fmt.Errorf("users[%d] is %T, neither a name nor a user", i, u)
		}
	}
	for device := range c.DiskSetup {
		o.partitioned = append(o.partitioned, device)
	}
	slices.Sort(o.partitioned)
	for i, fs := range c.FSSetup {
		f, err := cloudInitFilesystem(fs, c.DeviceAliases)
		if err != nil {
			return o, fmt.Errorf("fs_setup[%d]: %w", i, err)
		}
		o.filesystems = append(o.filesystems, f)
	}
	for i, m := range c.Mounts {
		if len(m) == 0 {
			return o, fmt.Errorf("mounts[%d] is empty", i)
		}
		var fields [2]string
		for j := 0; j < len(m) && j < 2; j++ {
			fields[j] = fmt.Sprint(m[j])
		}
		o.mounts = append(o.mounts, osMount{device: fields[0], where: fields[1]})
	}
	return o, nil
}

// cloudInitFilesystem reads an fs_setup entry as cloud-init does. Its schema
// takes partition as auto, any or none (a number, as a string or an integer,
// fails the whole document's validation). A device "<device>.<partition>" is
// split at its last dot, that partition winning over the key, and the device
// resolved through device_aliases; a path it finds no alias for keeps its dotted
// name, which no machine has. (Short names such as ephemeral0 are the
// datasource's to resolve, which the simulated machine does not judge.)
func cloudInitFilesystem(fs map[string]any, aliases map[string]string) (osFilesystem, error) {
	device, _ := fs["device"].(string)
	label, _ := fs["label"].(string)
	f := osFilesystem{device: device, label: label}
	switch p := fs["partition"].(type) {
	case nil:
	case string:
		if p != "auto" && p != "any" && p != "none" {
			return f, fmt.Errorf("partition %q: cloud-init's schema takes auto, any or none (a number goes into the device, <device>.<number>)", p)
		}
		f.partition = p
	default:
		return f, fmt.Errorf("partition %v: cloud-init's schema takes auto, any or none (a number goes into the device, <device>.<number>)", p)
	}
	i := strings.LastIndex(device, ".")
	if i < 0 {
		return f, nil
	}
	base, part := device[:i], device[i+1:]
	f.partition = part
	if target, ok := aliases[base]; ok {
		f.device = target
	} else if strings.HasPrefix(device, "/") {
		return f, fmt.Errorf("device %q: cloud-init splits it into %s and partition %q, finds no device_aliases entry for %s, and keeps %s, which does not exist", device, base, part, base, device)
	} else {
		f.device = base
	}
	return f, nil
}
