package token

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// k3s reads its options from this file and from every file in the drop-in directory.
const (
	k3sConfigPath   = "/etc/rancher/k3s/config.yaml"
	k3sConfigDropIn = "/etc/rancher/k3s/config.yaml.d/"
)

// cloudConfigFiles is the part of a cloud-config that can carry k3s's config file.
type cloudConfigFiles struct {
	WriteFiles []cloudConfigFile `json:"write_files"`
}

// cloudConfigFile is one write_files entry.
type cloudConfigFile struct {
	Path     string `json:"path"`
	Content  string `json:"content"`
	Encoding string `json:"encoding"`
}

// tokenFromBootstrapData reads the join token that a server's cloud-config gave k3s:
// the "token" and "agent-token" options of /etc/rancher/k3s/config.yaml (or a
// drop-in), in any form k3s accepts. Both capk3s's and cluster-api-k3s's bootstrap
// data write the token there. found is false when the data has no token.
func tokenFromBootstrapData(data []byte) (tok Token, found bool, err error) {
	var cc cloudConfigFiles
	if err := yaml.Unmarshal(data, &cc); err != nil {
		return Token{}, false, fmt.Errorf("bootstrap data is not a cloud-config: %w", err)
	}
	for _, f := range k3sConfigFiles(cc) {
		content, err := decodeContent(f.Content, f.Encoding)
		if err != nil {
			return Token{}, false, fmt.Errorf("k3s config file %s: %w", f.Path, err)
		}
		var options struct {
			Token      string `json:"token"`
			AgentToken string `json:"agent-token"`
		}
		if err := yaml.Unmarshal(content, &options); err != nil {
			return Token{}, false, fmt.Errorf("k3s config file %s is not YAML: %w", f.Path, err)
		}
		if options.Token != "" {
			tok.Server = Passphrase(options.Token)
		}
		if options.AgentToken != "" {
			tok.Agent = Passphrase(options.AgentToken)
		}
	}
	return tok, tok.Server != "", nil
}

// k3sConfigFiles returns the write_files entries that k3s reads as its config, in the
// order k3s applies them (a later file overrides an earlier one): config.yaml first,
// then the drop-ins in file-name order. Like k3s, it only takes drop-ins named
// *.yaml or *.yml directly in the drop-in directory. When several entries write the
// same path, only the last is kept: cloud-init overwrites the earlier ones.
func k3sConfigFiles(cc cloudConfigFiles) []cloudConfigFile {
	last := map[string]cloudConfigFile{}
	for _, f := range cc.WriteFiles {
		name, isDropIn := strings.CutPrefix(f.Path, k3sConfigDropIn)
		if f.Path == k3sConfigPath || (isDropIn && name != "" && !strings.Contains(name, "/") && hasYAMLSuffix(name)) {
			last[f.Path] = f
		}
	}
	files := make([]cloudConfigFile, 0, len(last))
	if f, ok := last[k3sConfigPath]; ok {
		files = append(files, f)
		delete(last, k3sConfigPath)
	}
	dropIns := make([]string, 0, len(last))
	for path := range last {
		dropIns = append(dropIns, path)
	}
	sort.Strings(dropIns)
	for _, path := range dropIns {
		files = append(files, last[path])
	}
	return files
}

func hasYAMLSuffix(name string) bool {
	lower := strings.ToLower(name)
	return strings.HasSuffix(lower, ".yaml") || strings.HasSuffix(lower, ".yml")
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
