package sim

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"
)

// Paths that k3s and its install script read.
const (
	k3sConfigPath    = "/etc/rancher/k3s/config.yaml"
	serverCACertPath = "/var/lib/rancher/k3s/server/tls/server-ca.crt"
	serverCAKeyPath  = "/var/lib/rancher/k3s/server/tls/server-ca.key"
	clientCACertPath = "/var/lib/rancher/k3s/server/tls/client-ca.crt"
	clientCAKeyPath  = "/var/lib/rancher/k3s/server/tls/client-ca.key"
)

// bootData is what a machine would act on: the files cloud-init writes, the commands
// it runs, and what the k3s install among them asks for.
type bootData struct {
	files    map[string][]byte
	commands []string
	install  installCommand
	// k3sConfig is /etc/rancher/k3s/config.yaml, parsed.
	k3sConfig map[string]any
	// os is the OS setup done before k3s.
	os osSetup
	// dropped are the config keys k3s server skipped (see readAsK3s).
	dropped []string
	// supervisorPort is where a server's supervisor listens (k3smodel.SupervisorPort).
	supervisorPort int
	// flannelBackend is a server's flannel-backend and disableAgent its
	// disable-agent, as k3s read them (readAsK3s); an agent's backend is its
	// cluster's (flannel.go).
	flannelBackend string
	disableAgent   bool
	// otherKeys are the cloud-config keys k3s does not depend on
	// (otherCloudConfigKeys), as the data sets them.
	otherKeys map[string]any
}

// cloudConfig is the part of cloud-init's schema that k3s machines depend on.
type cloudConfig struct {
	cloudConfigOS
	RunCmd     []any           `json:"runcmd"`
	WriteFiles []cloudInitFile `json:"write_files"`
}

type cloudInitFile struct {
	Path        string `json:"path"`
	Content     string `json:"content"`
	Encoding    string `json:"encoding"`
	Permissions string `json:"permissions"`
	Owner       string `json:"owner"`
	Append      bool   `json:"append"`
	Defer       bool   `json:"defer"`
}

// parseCloudConfig reads bootstrap data as cloud-init would. It fails where cloud-init
// would ignore the data or a file, or where k3s would not start.
func parseCloudConfig(data []byte) (*bootData, error) {
	if !bytes.HasPrefix(data, []byte("#cloud-config\n")) {
		return nil, errors.New("bootstrap data does not start with #cloud-config: cloud-init would not read it")
	}
	data, others, err := withoutOtherKeys(data)
	if err != nil {
		return nil, err
	}
	var cc cloudConfig
	if err := yaml.UnmarshalStrict(data, &cc); err != nil {
		return nil, fmt.Errorf("cloud-config: %w", err)
	}
	b := &bootData{files: map[string][]byte{}, otherKeys: others}
	if b.os, err = cc.osSetup(); err != nil {
		return nil, err
	}
	if err := checkPrimaryGroups(cc.Groups, cc.Users); err != nil {
		return nil, err
	}
	// Deferred entries are written in cloud-init's final stage, after users and
	// before the runcmd script: for the commands, all files are there.
	created := cloudInitAccounts(cc.Users)
	for i, f := range cc.WriteFiles {
		if f.Path == "" {
			return nil, fmt.Errorf("write_files[%d] has no path", i)
		}
		if err := checkFileOwner(f, created); err != nil {
			return nil, err
		}
		if _, dup := b.files[f.Path]; dup {
			return nil, fmt.Errorf("write_files writes %s twice", f.Path)
		}
		content, err := decodeContent(f.Content, f.Encoding)
		if err != nil {
			return nil, fmt.Errorf("write_files %s: %w", f.Path, err)
		}
		b.files[f.Path] = content
	}
	for i, c := range cc.RunCmd {
		// cloud-init runs a string through sh, a list as argv; capk3s writes strings.
		s, ok := c.(string)
		if !ok {
			return nil, fmt.Errorf("runcmd[%d] is %T, not a shell command", i, c)
		}
		b.commands = append(b.commands, s)
	}
	return b, b.readK3s()
}

// readK3s finds the k3s install among the commands and reads k3s's config file.
func (b *bootData) readK3s() error {
	var found []installCommand
	for _, c := range b.commands {
		ic, ok, err := parseInstallCommand(c)
		if err != nil {
			return err
		}
		if ok {
			found = append(found, ic)
		}
	}
	switch len(found) {
	case 0:
		return errors.New("no command installs k3s")
	case 1:
		b.install = found[0]
	default:
		return fmt.Errorf("%d commands install k3s; one is expected", len(found))
	}
	raw, ok := b.files[k3sConfigPath]
	if !ok {
		return fmt.Errorf("%s is not written", k3sConfigPath)
	}
	if err := yaml.Unmarshal(raw, &b.k3sConfig); err != nil {
		return fmt.Errorf("%s: %w", k3sConfigPath, err)
	}
	if b.k3sConfig == nil {
		b.k3sConfig = map[string]any{}
	}
	return nil
}

// decodeContent applies cloud-init's write_files encodings. internal/token reads
// bootstrap data too, but the simulator keeps its own reader on purpose: it stands for
// the machine, and a mistake shared with the product would hide from both.
func decodeContent(content, encoding string) ([]byte, error) {
	switch strings.ToLower(encoding) {
	case "", "text/plain":
		return []byte(content), nil
	case "b64", "base64":
		return base64.StdEncoding.DecodeString(content)
	case "gz", "gzip":
		return gunzip([]byte(content))
	case "gz+base64", "gzip+base64", "gz+b64", "gzip+b64":
		raw, err := base64.StdEncoding.DecodeString(content)
		if err != nil {
			return nil, err
		}
		return gunzip(raw)
	default:
		return nil, fmt.Errorf("unknown encoding %q", encoding)
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

// str is a k3s option's value as a string ("" when unset or not a string).
func (b *bootData) str(key string) string {
	s, _ := b.k3sConfig[key].(string)
	return s
}
