package sim

import (
	"fmt"
	"path"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"
	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
)

// timesyncdDropIns is where systemd-timesyncd reads its settings.
const timesyncdDropIns = "/etc/systemd/timesyncd.conf.d/"

// readIgnitionOS reads the OS setup from an Ignition config: passwd users,
// storage disks and file systems, mount units, and NTP servers from timesyncd's
// drop-ins. The boot commands were read with the scripts.
func (b *bootData) readIgnitionOS(cfg igntypes.Config) error {
	o := &b.os
	for _, u := range cfg.Passwd.Users {
		hash := ""
		if u.PasswordHash != nil {
			hash = *u.PasswordHash
		}
		o.users = append(o.users, osUser{name: u.Name, passwd: hash})
	}
	for _, d := range cfg.Storage.Disks {
		o.partitioned = append(o.partitioned, d.Device)
	}
	for _, fs := range cfg.Storage.Filesystems {
		f := osFilesystem{device: fs.Device}
		if fs.Label != nil {
			f.label = *fs.Label
		}
		o.filesystems = append(o.filesystems, f)
	}
	for _, u := range cfg.Systemd.Units {
		if !strings.HasSuffix(u.Name, ".mount") || u.Enabled == nil || !*u.Enabled || u.Contents == nil {
			continue
		}
		m, err := mountOfUnit(u)
		if err != nil {
			return err
		}
		o.mounts = append(o.mounts, m)
	}
	for p, content := range b.files {
		if path.Dir(p)+"/" != timesyncdDropIns || !strings.HasSuffix(p, ".conf") {
			continue
		}
		servers, set, err := timesyncdServers(content)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if !set {
			continue
		}
		if len(servers) == 0 {
			return fmt.Errorf("%s sets NTP= to no server at all", p)
		}
		o.ntp = &ntpSetup{enabled: true, servers: servers}
	}
	return nil
}

// mountOfUnit reads a mount unit as systemd does, which refuses a unit whose name
// is not its Where= path, escaped.
func mountOfUnit(u igntypes.Unit) (osMount, error) {
	opts, err := unit.DeserializeOptions(strings.NewReader(*u.Contents))
	if err != nil {
		return osMount{}, fmt.Errorf("unit %s: %w", u.Name, err)
	}
	var m osMount
	for _, o := range opts {
		if o.Section != "Mount" {
			continue
		}
		switch o.Name {
		case "What":
			m.device = o.Value
		case "Where":
			m.where = o.Value
		}
	}
	if m.where == "" || !path.IsAbs(m.where) {
		return m, fmt.Errorf("mount unit %s has no absolute Where=", u.Name)
	}
	if want := unit.UnitNamePathEscape(m.where) + ".mount"; u.Name != want {
		return m, fmt.Errorf("mount unit %s mounts %s: systemd only loads it as %s", u.Name, m.where, want)
	}
	return m, nil
}

// timesyncdServers is the NTP= of a timesyncd drop-in; set is false when it has
// none.
func timesyncdServers(content []byte) (servers []string, set bool, err error) {
	opts, err := unit.DeserializeOptions(strings.NewReader(string(content)))
	if err != nil {
		return nil, false, err
	}
	for _, o := range opts {
		if o.Section == "Time" && o.Name == "NTP" {
			servers, set = strings.Fields(o.Value), true
		}
	}
	return servers, set, nil
}
