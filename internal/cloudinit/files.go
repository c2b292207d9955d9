package cloudinit

import (
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

var octalMode = regexp.MustCompile(`^[0-7]{3,4}$`)

// fileSet collects the plan's files in order and refuses a second entry for a
// path, since cloud-init would silently let the later one win (and Ignition would
// refuse the whole config).
type fileSet struct {
	entries []File
	seen    map[string]string // cleaned path -> path as first given
}

func (s *fileSet) add(f File) error {
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
	switch f.Encoding {
	case "", bootstrapv1.Base64, bootstrapv1.Gzip, bootstrapv1.GzipBase64:
	default:
		return fmt.Errorf("file %s: unknown encoding %q", f.Path, f.Encoding)
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
	return s.add(File{Path: p, Owner: defaultOwner, Permissions: secretPermissions, Content: string(content)})
}

// addCertificate adds a CA file, forcing private keys to 0600 so that a caller's
// mistake cannot leave a cluster CA key world-readable.
func (s *fileSet) addCertificate(f File) error {
	if strings.HasSuffix(f.Path, ".key") {
		f.Permissions = secretPermissions
	}
	return s.addUser(f)
}

// addUser adds a file of the user's (or a CA file), with the defaults applied.
func (s *fileSet) addUser(f File) error {
	if f.Owner == "" {
		f.Owner = defaultOwner
	}
	if f.Permissions == "" {
		f.Permissions = defaultPermissions
		if f.FromSecret {
			f.Permissions = secretPermissions
		}
	}
	return s.add(f)
}
