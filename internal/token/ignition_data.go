package token

import (
	"errors"
	"fmt"
	"strings"

	ign "github.com/coreos/ignition/v2/config/v3_5"
	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/vincent-petithory/dataurl"
)

// ignitionGzip is Ignition's name for gzip-compressed contents.
const ignitionGzip = "gzip"

// ignitionFiles lists the storage.files of an Ignition config of any spec 3.x
// (capk3s writes 3.4), parsed and validated by Ignition's own library, as the
// machine does.
func ignitionFiles(data []byte) ([]bootstrapFile, error) {
	cfg, _, err := ign.ParseCompatibleVersion(data)
	if err != nil {
		// The report is left out: it may quote the config, and so the token.
		return nil, fmt.Errorf("bootstrap data is not an Ignition config: %w", err)
	}
	files := make([]bootstrapFile, 0, len(cfg.Storage.Files))
	for _, f := range cfg.Storage.Files {
		files = append(files, bootstrapFile{
			path:    f.Path,
			content: func() ([]byte, error) { return ignitionContent(f) },
		})
	}
	return files, nil
}

// ignitionContent is a file's content as Ignition writes it: contents, then every
// append fragment, each decompressed. Only data URLs can be read here; a file
// fetched from elsewhere at boot is an error.
func ignitionContent(f igntypes.File) ([]byte, error) {
	content, err := ignitionResource(f.Contents)
	if err != nil {
		return nil, err
	}
	for i, r := range f.Append {
		fragment, err := ignitionResource(r)
		if err != nil {
			return nil, fmt.Errorf("append %d: %w", i, err)
		}
		content = append(content, fragment...)
	}
	return content, nil
}

func ignitionResource(r igntypes.Resource) ([]byte, error) {
	if r.Source == nil {
		// Ignition writes an empty file.
		return []byte{}, nil
	}
	if !strings.HasPrefix(*r.Source, "data:") {
		// Only the scheme is named: the rest of the URL may hold credentials.
		scheme, _, _ := strings.Cut(*r.Source, ":")
		return nil, fmt.Errorf("contents are fetched at boot (%s URL), not carried in the bootstrap data", scheme)
	}
	du, err := dataurl.DecodeString(*r.Source)
	if err != nil {
		return nil, errors.New("contents are not a valid data URL")
	}
	switch c := r.Compression; {
	case c == nil || *c == "":
		return du.Data, nil
	case *c == ignitionGzip:
		return gunzip(du.Data)
	default:
		return nil, fmt.Errorf("unknown Ignition compression %q", *c)
	}
}
