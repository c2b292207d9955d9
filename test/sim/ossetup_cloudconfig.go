package sim

import (
	"fmt"
	"slices"

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
	Users     []any            `json:"users"`
	DiskSetup map[string]any   `json:"disk_setup"`
	FSSetup   []map[string]any `json:"fs_setup"`
	Mounts    [][]any          `json:"mounts"`
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
	for _, fs := range c.FSSetup {
		s := func(k string) string { v, _ := fs[k].(string); return v }
		o.filesystems = append(o.filesystems, osFilesystem{device: s("device"), partition: s("partition"), label: s("label")})
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
