package token

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// k3s reads its options from this file and from every file in the drop-in directory.
const (
	k3sConfigPath   = "/etc/rancher/k3s/config.yaml"
	k3sConfigDropIn = "/etc/rancher/k3s/config.yaml.d/"
)

// bootstrapFile is a file that bootstrap data writes on the machine. Its content
// is decoded only when asked for, so that a file k3s does not read, in a form
// that cannot be read here, does not hide the token.
type bootstrapFile struct {
	path    string
	content func() ([]byte, error)
}

// tokenFromBootstrapData reads the join token that a server's bootstrap data gave
// k3s: the "token" and "agent-token" options of /etc/rancher/k3s/config.yaml (or a
// drop-in), in any form k3s accepts. Both capk3s's and cluster-api-k3s's bootstrap
// data write the token there. format is the data Secret's "format" key
// (cloud-config or ignition); when it is empty, data starting with "{" is taken
// for Ignition (JSON) and anything else for a cloud-config. found is false when
// the data has no token.
func tokenFromBootstrapData(data []byte, format string) (tok Token, found bool, err error) {
	files, err := bootstrapFiles(data, format)
	if err != nil {
		return Token{}, false, err
	}
	for _, f := range k3sConfigFiles(files) {
		content, err := f.content()
		if err != nil {
			return Token{}, false, fmt.Errorf("k3s config file %s: %w", f.path, err)
		}
		var options struct {
			Token      string `json:"token"`
			AgentToken string `json:"agent-token"`
		}
		if err := yaml.Unmarshal(content, &options); err != nil {
			return Token{}, false, fmt.Errorf("k3s config file %s is not YAML: %w", f.path, err)
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

// bootstrapFiles lists the files data writes, in the order it writes them.
func bootstrapFiles(data []byte, format string) ([]bootstrapFile, error) {
	switch bootstrapv1.Format(format) {
	case bootstrapv1.CloudConfig:
		return cloudConfigFiles(data)
	case bootstrapv1.Ignition:
		return ignitionFiles(data)
	case "":
		// Data Secrets written before the contract's "format" key existed.
		if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
			return ignitionFiles(data)
		}
		return cloudConfigFiles(data)
	default:
		return nil, fmt.Errorf("bootstrap data format %q: want %s or %s", format, bootstrapv1.CloudConfig, bootstrapv1.Ignition)
	}
}

// k3sConfigFiles returns the files that k3s reads as its config, in the order k3s
// applies them (a later file overrides an earlier one): config.yaml first, then the
// drop-ins in file-name order. Like k3s, it only takes drop-ins named *.yaml or
// *.yml directly in the drop-in directory. When several entries write the same
// path, only the last is kept: it overwrites the earlier ones on the machine.
func k3sConfigFiles(all []bootstrapFile) []bootstrapFile {
	last := map[string]bootstrapFile{}
	for _, f := range all {
		name, isDropIn := strings.CutPrefix(f.path, k3sConfigDropIn)
		if f.path == k3sConfigPath || (isDropIn && name != "" && !strings.Contains(name, "/") && hasYAMLSuffix(name)) {
			last[f.path] = f
		}
	}
	files := make([]bootstrapFile, 0, len(last))
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
