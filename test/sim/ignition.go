package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"
	ign "github.com/coreos/ignition/v2/config/v3_5"
	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/vincent-petithory/dataurl"
)

// parseIgnition reads bootstrap data as Ignition and then systemd would: Ignition
// (any spec 3.0-3.5) writes the files, and an enabled unit runs a script among
// them. The script's lines are the commands, as runcmd's entries are for
// cloud-init. It fails where Ignition would refuse the config or where nothing
// would run the script.
func parseIgnition(data []byte) (*bootData, error) {
	cfg, rpt, err := ign.ParseCompatibleVersion(data)
	if err != nil {
		return nil, fmt.Errorf("ignition: %w: %s", err, strings.TrimSpace(rpt.String()))
	}
	b := &bootData{files: map[string][]byte{}}
	modes := map[string]int{}
	for _, f := range cfg.Storage.Files {
		content, err := ignitionContent(f)
		if err != nil {
			return nil, fmt.Errorf("ignition file %s: %w", f.Path, err)
		}
		b.files[f.Path] = content
		if f.Mode != nil {
			modes[f.Path] = *f.Mode
		}
	}
	if err := b.readIgnitionScripts(cfg.Systemd.Units, modes); err != nil {
		return nil, err
	}
	if err := b.readIgnitionOS(cfg); err != nil {
		return nil, err
	}
	return b, b.readK3s()
}

// ignitionContent is a file's content once Ignition has fetched and decompressed
// it. The simulator has no network, so only data URLs (what capk3s writes) are
// read.
func ignitionContent(f igntypes.File) ([]byte, error) {
	if len(f.Append) > 0 {
		return nil, errors.New("appends are not supported by the simulator")
	}
	if f.Contents.Source == nil {
		return []byte{}, nil
	}
	du, err := dataurl.DecodeString(*f.Contents.Source)
	if err != nil {
		return nil, fmt.Errorf("source is not a data URL: %w", err)
	}
	switch c := f.Contents.Compression; {
	case c == nil || *c == "":
		return du.Data, nil
	case *c == "gzip":
		return gunzip(du.Data)
	default:
		return nil, fmt.Errorf("compression %q is not one Ignition knows", *c)
	}
}

// scriptUnit is an enabled unit whose ExecStart runs a file that Ignition writes.
type scriptUnit struct {
	name, script  string
	before, after []string
	commands      []string
}

// readIgnitionScripts finds the units that run scripts: the one whose script
// installs k3s gives the commands; any other is a boot-commands unit, which must
// be ordered before it.
func (b *bootData) readIgnitionScripts(units []igntypes.Unit, modes map[string]int) error {
	found, err := scriptUnits(units, b.files, modes)
	if err != nil {
		return err
	}
	var install []int
	for i, su := range found {
		for _, c := range su.commands {
			if _, ok, _ := parseInstallCommand(c); ok {
				install = append(install, i)
				break
			}
		}
	}
	switch {
	case len(found) == 0:
		return errors.New("no enabled unit runs a script that Ignition writes: nothing would install k3s")
	case len(found) == 1:
		// Whatever it runs is the bootstrap; readK3s says if it installs nothing.
		install = []int{0}
	case len(install) == 0:
		return fmt.Errorf("%d enabled units run scripts, and none installs k3s", len(found))
	case len(install) > 1:
		var names []string
		for _, i := range install {
			names = append(names, found[i].script)
		}
		return fmt.Errorf("%d enabled units run bootstrap scripts (%s); one is expected", len(install), strings.Join(names, ", "))
	}
	main := found[install[0]]
	b.commands = main.commands
	b.os.bootFirst = true
	for i, su := range found {
		if i == install[0] {
			continue
		}
		b.os.bootCommands = append(b.os.bootCommands, su.commands...)
		if !slices.Contains(su.before, main.name) && !slices.Contains(main.after, su.name) {
			b.os.bootFirst = false
		}
	}
	return nil
}

// scriptUnits lists the enabled units that run a file Ignition writes, each
// checked to be executable.
func scriptUnits(units []igntypes.Unit, files map[string][]byte, modes map[string]int) ([]scriptUnit, error) {
	var found []scriptUnit
	for _, u := range units {
		if u.Enabled == nil || !*u.Enabled || u.Contents == nil {
			continue
		}
		opts, err := unit.DeserializeOptions(strings.NewReader(*u.Contents))
		if err != nil {
			return nil, fmt.Errorf("unit %s: %w", u.Name, err)
		}
		su := scriptUnit{name: u.Name}
		for _, o := range opts {
			switch {
			case o.Section == "Unit" && o.Name == "Before":
				su.before = append(su.before, strings.Fields(o.Value)...)
			case o.Section == "Unit" && o.Name == "After":
				su.after = append(su.after, strings.Fields(o.Value)...)
			case o.Section == "Service" && o.Name == "ExecStart":
				if exe := strings.Fields(o.Value); len(exe) > 0 {
					if _, ok := files[exe[0]]; ok {
						su.script = exe[0]
					}
				}
			}
		}
		if su.script == "" {
			continue
		}
		if modes[su.script]&0o100 == 0 {
			return nil, fmt.Errorf("%s is not executable (mode %o): systemd could not run it", su.script, modes[su.script])
		}
		if su.commands, err = scriptCommands(su.script, files[su.script]); err != nil {
			return nil, err
		}
		found = append(found, su)
	}
	return found, nil
}

// scriptCommands are a script's lines after the #! line, as runcmd's entries are
// for cloud-init.
func scriptCommands(path string, script []byte) ([]string, error) {
	body, ok := strings.CutPrefix(string(script), "#!")
	if !ok {
		return nil, fmt.Errorf("%s has no #! line: systemd could not execute it", path)
	}
	var cmds []string
	for _, l := range strings.Split(body, "\n")[1:] { // the rest of the #! line is the interpreter
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			cmds = append(cmds, l)
		}
	}
	return cmds, nil
}
