package cloudinit

import (
	"encoding/base64"
	"fmt"
	"path"
	"regexp"
	"strings"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

const (
	defaultOwner       = "root:root"
	defaultPermissions = "0644"
	// secretPermissions is for files holding tokens, passwords or private keys.
	secretPermissions = "0600"
)

// cloud-init's names for write_files encodings.
const (
	encB64   = "b64"
	encGzB64 = "gz+b64"
)

var octalMode = regexp.MustCompile(`^[0-7]{3,4}$`)

// writeFile is one cloud-init write_files entry.
type writeFile struct {
	Path        string `json:"path"`
	Owner       string `json:"owner"`
	Permissions string `json:"permissions"`
	Encoding    string `json:"encoding,omitempty"`
	Content     string `json:"content"`
}

// fileSet collects write_files entries in order and refuses a second entry for a
// path, since cloud-init would silently let the later one win.
type fileSet struct {
	entries []writeFile
	seen    map[string]string // cleaned path -> path as first given
}

func (s *fileSet) add(f writeFile) error {
	if !carriable(f.Path) {
		return fmt.Errorf("file path %q %s", f.Path, notCarriable)
	}
	if !path.IsAbs(f.Path) {
		return fmt.Errorf("file path %q must be absolute", f.Path)
	}
	switch f.Path[strings.LastIndex(f.Path, "/")+1:] {
	case "", ".", "..":
		return fmt.Errorf("file path %q names a directory", f.Path)
	}
	if !octalMode.MatchString(f.Permissions) {
		return fmt.Errorf("file %s: permissions %q are not an octal mode", f.Path, f.Permissions)
	}
	if !carriable(f.Owner) || strings.Contains(f.Owner, "\n") || misreadByYAML11(f.Owner) {
		return fmt.Errorf("file %s: owner %q is not a user[:group]", f.Path, f.Owner)
	}
	// "/a//b" and "/a/b" are one file on disk.
	key := path.Clean(f.Path)
	if first, dup := s.seen[key]; dup {
		return fmt.Errorf("file path %q is written twice (also as %q)", f.Path, first)
	}
	if s.seen == nil {
		s.seen = map[string]string{}
	}
	s.seen[key] = f.Path
	s.entries = append(s.entries, f)
	return nil
}

// addGenerated adds a file capk3s renders itself; they all may hold secrets.
func (s *fileSet) addGenerated(p string, content []byte) error {
	f := writeFile{Path: p, Owner: defaultOwner, Permissions: secretPermissions}
	f.Content, f.Encoding = plainContent(string(content))
	return s.add(f)
}

// addCertificate adds a CA file, forcing private keys to 0600 so that a caller's
// mistake cannot leave a cluster CA key world-readable.
func (s *fileSet) addCertificate(f File) error {
	if strings.HasSuffix(f.Path, ".key") {
		f.Permissions = secretPermissions
	}
	return s.addUser(f)
}

func (s *fileSet) addUser(f File) error {
	w := writeFile{Path: f.Path, Owner: f.Owner, Permissions: f.Permissions}
	if w.Owner == "" {
		w.Owner = defaultOwner
	}
	if w.Permissions == "" {
		w.Permissions = defaultPermissions
	}
	switch f.Encoding {
	case "":
		w.Content, w.Encoding = plainContent(f.Content)
	case bootstrapv1.Base64, bootstrapv1.GzipBase64:
		// Already text by declaration; anything else would be mangled on the way.
		if !yamlSafe(f.Content) {
			return fmt.Errorf("file %s: content declared %s is not base64 text", f.Path, f.Encoding)
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
		return fmt.Errorf("file %s: unknown encoding %q", f.Path, f.Encoding)
	}
	return s.add(w)
}

// plainContent keeps readable text as is and base64-encodes anything YAML could
// not carry byte for byte; cloud-init decodes it, so the file is the same.
func plainContent(s string) (content, encoding string) {
	if yamlSafe(s) && !misreadByYAML11(s) {
		return s, ""
	}
	return base64.StdEncoding.EncodeToString([]byte(s)), encB64
}
