package token

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"
)

// cloudConfigDoc is the part of a cloud-config that can carry k3s's config file.
type cloudConfigDoc struct {
	WriteFiles []cloudConfigFile `json:"write_files"`
}

// cloudConfigFile is one write_files entry.
type cloudConfigFile struct {
	Path     string `json:"path"`
	Content  string `json:"content"`
	Encoding string `json:"encoding"`
}

// cloudConfigFiles lists a cloud-config's write_files.
func cloudConfigFiles(data []byte) ([]bootstrapFile, error) {
	var cc cloudConfigDoc
	if err := yaml.Unmarshal(data, &cc); err != nil {
		return nil, fmt.Errorf("bootstrap data is not a cloud-config: %w", err)
	}
	files := make([]bootstrapFile, 0, len(cc.WriteFiles))
	for _, f := range cc.WriteFiles {
		files = append(files, bootstrapFile{
			path:    f.Path,
			content: func() ([]byte, error) { return decodeContent(f.Content, f.Encoding) },
		})
	}
	return files, nil
}

// decodeContent undoes cloud-init's write_files encodings.
func decodeContent(content, encoding string) ([]byte, error) {
	raw := []byte(content)
	var err error
	switch strings.ToLower(encoding) {
	case "", "text/plain":
		return raw, nil
	case "b64", "base64":
		return base64.StdEncoding.DecodeString(content)
	case "gz", "gzip":
		return gunzip(raw)
	case "gz+b64", "gz+base64", "gzip+b64", "gzip+base64":
		if raw, err = base64.StdEncoding.DecodeString(content); err != nil {
			return nil, err
		}
		return gunzip(raw)
	default:
		return nil, fmt.Errorf("unknown write_files encoding %q", encoding)
	}
}

func gunzip(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	return io.ReadAll(r)
}
