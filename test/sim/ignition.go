package sim

import (
	"errors"
	"fmt"
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
	script, err := bootstrapScript(cfg.Systemd.Units, b.files, modes)
	if err != nil {
		return nil, err
	}
	body, ok := strings.CutPrefix(string(b.files[script]), "#!")
	if !ok {
		return nil, fmt.Errorf("%s has no #! line: systemd could not execute it", script)
	}
	lines := strings.Split(body, "\n")[1:] // the rest of the #! line is the interpreter
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			b.commands = append(b.commands, l)
		}
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

// bootstrapScript finds the one enabled unit whose ExecStart runs a file that
// Ignition writes, and checks that the file is executable.
func bootstrapScript(units []igntypes.Unit, files map[string][]byte, modes map[string]int) (string, error) {
	var found []string
	for _, u := range units {
		if u.Enabled == nil || !*u.Enabled || u.Contents == nil {
			continue
		}
		opts, err := unit.DeserializeOptions(strings.NewReader(*u.Contents))
		if err != nil {
			return "", fmt.Errorf("unit %s: %w", u.Name, err)
		}
		for _, o := range opts {
			if o.Section != "Service" || o.Name != "ExecStart" {
				continue
			}
			exe := strings.Fields(o.Value)
			if len(exe) == 0 {
				continue
			}
			if _, ok := files[exe[0]]; ok {
				found = append(found, exe[0])
			}
		}
	}
	switch len(found) {
	case 0:
		return "", errors.New("no enabled unit runs a script that Ignition writes: nothing would install k3s")
	case 1:
	default:
		return "", fmt.Errorf("%d enabled units run bootstrap scripts (%s); one is expected", len(found), strings.Join(found, ", "))
	}
	if modes[found[0]]&0o100 == 0 {
		return "", fmt.Errorf("%s is not executable (mode %o): systemd could not run it", found[0], modes[found[0]])
	}
	return found[0], nil
}
