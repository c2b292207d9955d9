package cloudinit

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"

	ign "github.com/coreos/ignition/v2/config/v3_4"
	igntypes "github.com/coreos/ignition/v2/config/v3_4/types"
	"github.com/vincent-petithory/dataurl"
	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// Ignition spec 3.4 rather than the newest stable (3.5): every Ignition since
// v2.15 reads it, so older Flatcar and Fedora CoreOS images boot too, and capk3s
// uses nothing that 3.5 added.
const ignitionVersion = "3.4.0"

// gzipCompression is Ignition's name for gzip-compressed contents.
const gzipCompression = "gzip"

// encodeIgnition writes the plan as an Ignition config: the plan's files, the
// bootstrap script holding its commands, the unit that runs the script once the
// network is up, and the OS setup (ossetup_ignition.go). Ignition writes files and enables units before systemd
// starts anything, so the files are on disk before the first command runs, as
// with cloud-init.
func encodeIgnition(p *plan) ([]byte, error) {
	cfg := igntypes.Config{Ignition: igntypes.Ignition{Version: ignitionVersion}}
	for _, f := range p.files {
		if what, ok := reservedIgnitionPaths[path.Clean(f.Path)]; ok {
			return nil, fmt.Errorf("file path %q is where capk3s writes %s", f.Path, what)
		}
		file, err := ignitionFile(f)
		if err != nil {
			return nil, err
		}
		cfg.Storage.Files = append(cfg.Storage.Files, file)
	}
	script, err := ignitionFile(File{Path: bootstrapScriptPath, Owner: defaultOwner, Permissions: scriptPermissions, Content: bootstrapScript(append(ignitionSpecialModeChmods(p.files), p.commands...))})
	if err != nil {
		return nil, err
	}
	cfg.Storage.Files = append(cfg.Storage.Files, script)
	cfg.Systemd.Units = []igntypes.Unit{{Name: bootstrapUnitName, Enabled: ptr.To(true), Contents: ptr.To(bootstrapUnit)}}
	if err := ignitionOS(&cfg, p.os); err != nil {
		return nil, err
	}

	out, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("marshalling Ignition config: %w", err)
	}
	// Ignition's own parser and validator, as the machine will run them, so that a
	// config it would refuse never reaches a Secret.
	if _, rpt, err := ign.Parse(out); err != nil {
		return nil, fmt.Errorf("invalid Ignition config: %w: %s", err, rpt.String())
	}
	return out, nil
}

// ignitionFile turns a plan file into an Ignition file entry whose contents are
// a data URL of the declared bytes; gzip content stays compressed and Ignition
// decompresses it, so the file on disk is the same as with cloud-init.
func ignitionFile(f File) (igntypes.File, error) {
	mode, err := strconv.ParseUint(f.Permissions, 8, 32)
	if err != nil {
		return igntypes.File{}, fmt.Errorf("file %s: permissions %q are not an octal mode", f.Path, f.Permissions)
	}
	raw, compression, err := declaredBytes(f)
	if err != nil {
		return igntypes.File{}, err
	}
	user, group := ignitionOwner(f.Owner)
	return igntypes.File{
		Node: igntypes.Node{
			// Ignition wants clean paths; "/a//b" is the file cloud-init writes too.
			Path: path.Clean(f.Path),
			User: user, Group: group,
			// cloud-init replaces files the image already has (/etc/motd, ...);
			// without this Ignition would fail the boot instead.
			Overwrite: ptr.To(true),
		},
		FileEmbedded1: igntypes.FileEmbedded1{
			Mode: ptr.To(int(mode)),
			Contents: igntypes.Resource{
				Source:      ptr.To(dataurl.New(raw, "application/octet-stream").String()),
				Compression: compression,
			},
		},
	}, nil
}

// declaredBytes undoes the base64 layer the user declared; gzip is left to
// Ignition (compression "gzip").
func declaredBytes(f File) ([]byte, *string, error) {
	switch f.Encoding {
	case "":
		return []byte(f.Content), nil, nil
	case bootstrapv1.Gzip:
		return []byte(f.Content), ptr.To(gzipCompression), nil
	case bootstrapv1.Base64, bootstrapv1.GzipBase64:
		raw, err := base64.StdEncoding.DecodeString(f.Content)
		if err != nil {
			return nil, nil, fmt.Errorf("file %s: content declared %s does not decode: %w", f.Path, f.Encoding, err)
		}
		if f.Encoding == bootstrapv1.GzipBase64 {
			return raw, ptr.To(gzipCompression), nil
		}
		return raw, nil, nil
	default:
		return nil, nil, fmt.Errorf("file %s: unknown encoding %q", f.Path, f.Encoding)
	}
}

// ignitionOwner splits cloud-init's "user[:group]"; numeric parts are IDs, as
// chown reads them.
func ignitionOwner(owner string) (igntypes.NodeUser, igntypes.NodeGroup) {
	userPart, groupPart, _ := strings.Cut(owner, ":")
	var u igntypes.NodeUser
	var g igntypes.NodeGroup
	if id, err := strconv.Atoi(userPart); err == nil {
		u.ID = ptr.To(id)
	} else if userPart != "" {
		u.Name = ptr.To(userPart)
	}
	if id, err := strconv.Atoi(groupPart); err == nil {
		g.ID = ptr.To(id)
	} else if groupPart != "" {
		g.Name = ptr.To(groupPart)
	}
	return u, g
}
