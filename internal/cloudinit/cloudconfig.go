package cloudinit

import (
	"encoding/base64"
	"fmt"

	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// cloud-init's names for write_files encodings.
const (
	encB64   = "b64"
	encGzB64 = "gz+b64"
)

// header must stay a plain "#cloud-config": a "## template: jinja" line would make
// cloud-init expand "{{ }}" in user files and commands.
const header = "#cloud-config\n"

// cloudConfig is the part of cloud-init's schema that capk3s writes.
type cloudConfig struct {
	ccOSSetup
	WriteFiles []writeFile `json:"write_files,omitempty"`
	RunCmd     []string    `json:"runcmd"`
}

// writeFile is one cloud-init write_files entry.
type writeFile struct {
	Path        string `json:"path"`
	Owner       string `json:"owner"`
	Permissions string `json:"permissions"`
	Encoding    string `json:"encoding,omitempty"`
	Content     string `json:"content"`
	// Defer writes the file in cloud-init's final stage (cloudconfig_owner.go).
	Defer bool `json:"defer,omitempty"`
}

// encodeCloudConfig writes the plan as a #cloud-config document: files as
// write_files, commands as runcmd (cloud-init runs them, one sh line each, in
// order), after the chowns that numeric owners need (cloudconfig_owner.go) and
// the check that cloud-init applied the files and users (cloudconfig_check.go).
func encodeCloudConfig(p *plan) ([]byte, error) {
	files := make([]writeFile, 0, len(p.files))
	var chowns, chmods []string
	created := createdAccounts(p.os.users)
	for _, f := range p.files {
		w, err := cloudInitFile(f)
		if err != nil {
			return nil, err
		}
		if c := cloudInitOwnership(&w, created); c != "" {
			chowns = append(chowns, c)
		}
		if c := specialModeChmod(f); c != "" {
			chmods = append(chmods, c)
		}
		files = append(files, w)
	}
	cmds := append(append(chowns, chmods...), checkCommand(p.files, p.os.users))
	cmds = append(cmds, p.commands...)
	out, err := yaml.Marshal(cloudConfig{ccOSSetup: cloudConfigOS(p.os), WriteFiles: files, RunCmd: cmds})
	if err != nil {
		return nil, fmt.Errorf("marshalling cloud-config: %w", err)
	}
	out = append([]byte(header), out...)
	if p.additional.CloudConfig != "" {
		return mergeCloudConfig(out, p.additional.CloudConfig)
	}
	return out, nil
}

// cloudInitFile carries a file's content in a form YAML keeps byte for byte.
func cloudInitFile(f File) (writeFile, error) {
	w := writeFile{Path: f.Path, Owner: f.Owner, Permissions: f.Permissions}
	switch f.Encoding {
	case "":
		w.Content, w.Encoding = plainContent(f.Content)
	case bootstrapv1.Base64, bootstrapv1.GzipBase64:
		// Already text by declaration; anything else would be mangled on the way.
		if !yamlSafe(f.Content) {
			return w, fmt.Errorf("file %s: content declared %s is not base64 text", f.Path, f.Encoding)
		}
		w.Content, w.Encoding = f.Content, encB64
		if misreadByYAML11(w.Content) {
			// A line break makes the emitter quote the scalar, and base64 decoders
			// (cloud-init's and Go's) skip line breaks.
			w.Content += "\n"
		}
		if f.Encoding == bootstrapv1.GzipBase64 {
			w.Encoding = encGzB64
		}
	case bootstrapv1.Gzip:
		// Raw gzip is never valid UTF-8 and YAML strings must be, so it is carried
		// base64 encoded; cloud-init undoes both layers and writes the same bytes.
		w.Content, w.Encoding = base64.StdEncoding.EncodeToString([]byte(f.Content)), encGzB64
	default:
		// newPlan refuses unknown encodings; this guards a plan built some other way.
		return w, fmt.Errorf("file %s: unknown encoding %q", f.Path, f.Encoding)
	}
	return w, nil
}

// plainContent keeps readable text as is and base64-encodes anything YAML could
// not carry byte for byte; cloud-init decodes it, so the file is the same.
func plainContent(s string) (content, encoding string) {
	if yamlSafe(s) && !misreadByYAML11(s) {
		return s, ""
	}
	return base64.StdEncoding.EncodeToString([]byte(s)), encB64
}
