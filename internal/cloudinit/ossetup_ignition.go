package cloudinit

import (
	"fmt"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"
	igntypes "github.com/coreos/ignition/v2/config/v3_4/types"
	"k8s.io/utils/ptr"
)

const (
	// bootCommandsScriptPath holds bootCommands, run by bootCommandsUnitName on
	// every boot, as cloud-init runs bootcmd.
	bootCommandsScriptPath = "/etc/capk3s/bootcmd.sh"
	bootCommandsUnitName   = "capk3s-bootcmd.service"
	// timesyncdDropInPath sets the NTP servers of systemd-timesyncd, the time
	// client of Flatcar and of most systemd images.
	timesyncdDropInPath = "/etc/systemd/timesyncd.conf.d/capk3s-ntp.conf"
	timesyncdUnitName   = "systemd-timesyncd.service"
)

// bootCommandsUnit runs the boot commands on every boot (no done marker) and
// before the bootstrap unit, so that on the first boot they come before the k3s
// install, as bootcmd comes before runcmd. A failing boot command does not hold
// the bootstrap back, as with cloud-init.
const bootCommandsUnit = `[Unit]
Description=Run the boot commands of the machine's KThreesConfig (capk3s)
Before=` + bootstrapUnitName + `

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=` + bootCommandsScriptPath + `

[Install]
WantedBy=multi-user.target
`

// reservedIgnitionPaths are the files the Ignition encoder writes itself.
var reservedIgnitionPaths = map[string]string{
	bootstrapScriptPath:    "its Ignition bootstrap script",
	bootCommandsScriptPath: "the Ignition bootCommands script",
	timesyncdDropInPath:    "the Ignition NTP settings",
}

// ignitionOS adds the plan's OS setup to cfg. IgnitionOSSetupErrors has refused
// what Ignition cannot say; what is left maps one to one.
func ignitionOS(cfg *igntypes.Config, s osSetup) error {
	if len(s.bootCommands) > 0 {
		script, err := ignitionFile(File{Path: bootCommandsScriptPath, Owner: defaultOwner, Permissions: scriptPermissions, Content: bootstrapScript(s.bootCommands)})
		if err != nil {
			return err
		}
		cfg.Storage.Files = append(cfg.Storage.Files, script)
		cfg.Systemd.Units = append(cfg.Systemd.Units, igntypes.Unit{Name: bootCommandsUnitName, Enabled: ptr.To(true), Contents: ptr.To(bootCommandsUnit)})
	}
	if n := s.ntp; n != nil && ptr.Deref(n.Enabled, true) {
		if len(n.Servers) > 0 {
			f, err := ignitionFile(File{Path: timesyncdDropInPath, Owner: defaultOwner, Permissions: defaultPermissions,
				Content: "[Time]\nNTP=" + strings.Join(n.Servers, " ") + "\n"})
			if err != nil {
				return err
			}
			cfg.Storage.Files = append(cfg.Storage.Files, f)
		}
		cfg.Systemd.Units = append(cfg.Systemd.Units, igntypes.Unit{Name: timesyncdUnitName, Enabled: ptr.To(true)})
	}
	for _, u := range s.users {
		cfg.Passwd.Users = append(cfg.Passwd.Users, ignitionUser(u))
	}
	for _, p := range s.partitions {
		if !ptr.Deref(p.Layout, false) {
			// layout false: leave the device as it is, as cloud-init does.
			continue
		}
		cfg.Storage.Disks = append(cfg.Storage.Disks, igntypes.Disk{
			Device: p.Device, WipeTable: p.Overwrite,
			// Size 0: as large as the disk allows, one partition over all of it.
			Partitions: []igntypes.Partition{{Number: 1, SizeMiB: ptr.To(0)}},
		})
	}
	for i := range s.filesystems {
		fs := &s.filesystems[i]
		device, err := ignitionFilesystemDevice(fs)
		if err != nil {
			return fmt.Errorf("spec.diskSetup.filesystems[%d]: %w", i, err)
		}
		f := igntypes.Filesystem{Device: device, Format: ptr.To(fs.Filesystem), WipeFilesystem: fs.Overwrite}
		if fs.Label != "" {
			f.Label = ptr.To(fs.Label)
		}
		for _, o := range fs.ExtraOpts {
			f.Options = append(f.Options, igntypes.FilesystemOption(o))
		}
		cfg.Storage.Filesystems = append(cfg.Storage.Filesystems, f)
	}
	for i, m := range s.mounts {
		mu, err := ignitionMount(m)
		if err != nil {
			return fmt.Errorf("spec.mounts[%d]: %w", i, err)
		}
		cfg.Systemd.Units = append(cfg.Systemd.Units, igntypes.Unit{
			Name: mountUnitName(mu.where), Enabled: ptr.To(true), Contents: ptr.To(mu.contents(i)),
		})
	}
	return nil
}

func ignitionUser(u user) igntypes.PasswdUser {
	out := igntypes.PasswdUser{Name: u.Name}
	set := func(dst **string, v string) {
		if v != "" {
			*dst = ptr.To(v)
		}
	}
	set(&out.Gecos, u.Gecos)
	set(&out.HomeDir, u.HomeDir)
	set(&out.Shell, u.Shell)
	set(&out.PrimaryGroup, u.PrimaryGroup)
	set(&out.PasswordHash, u.passwordHash)
	for _, g := range strings.Split(u.Groups, ",") {
		if g = strings.TrimSpace(g); g != "" {
			out.Groups = append(out.Groups, igntypes.Group(g))
		}
	}
	for _, k := range u.SSHAuthorizedKeys {
		out.SSHAuthorizedKeys = append(out.SSHAuthorizedKeys, igntypes.SSHAuthorizedKey(k))
	}
	return out
}

// mountUnitName is the name systemd requires for a mount unit of where.
func mountUnitName(where string) string {
	return unit.UnitNamePathEscape(where) + ".mount"
}

// contents is the mount unit. The unit is ordered before local-fs.target, as
// fstab mounts are, so that k3s (after network-online.target) finds it mounted.
func (m mountUnit) contents(index int) string {
	esc := func(s string) string { return strings.ReplaceAll(s, "%", "%%") }
	var b strings.Builder
	fmt.Fprintf(&b, "[Unit]\nDescription=Mount %s (mounts[%d] of the machine's KThreesConfig)\nBefore=local-fs.target\n\n", esc(m.where), index)
	fmt.Fprintf(&b, "[Mount]\nWhat=%s\nWhere=%s\n", esc(m.what), esc(m.where))
	if m.fsType != "" {
		fmt.Fprintf(&b, "Type=%s\n", esc(m.fsType))
	}
	fmt.Fprintf(&b, "Options=%s\n\n[Install]\nWantedBy=local-fs.target\n", esc(m.options))
	return b.String()
}
