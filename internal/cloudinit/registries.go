package cloudinit

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

const (
	// registriesPath is k3s's default private-registry path, which is why config.yaml
	// needs no private-registry option when capk3s writes this file.
	registriesPath   = "/etc/rancher/k3s/registries.yaml"
	registryCADirFmt = "/etc/rancher/k3s/registries.d/%s/ca.crt"
)

// registriesFile is k3s's registries.yaml.
type registriesFile struct {
	Mirrors map[string]registryMirror `json:"mirrors,omitempty"`
	Configs map[string]registryConfig `json:"configs,omitempty"`
}

type registryMirror struct {
	Endpoint []string `json:"endpoint"`
}

type registryConfig struct {
	Auth *registryAuth `json:"auth,omitempty"`
	TLS  *registryTLS  `json:"tls,omitempty"`
}

type registryAuth struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identity_token,omitempty"`
}

type registryTLS struct {
	CAFile             string `json:"ca_file,omitempty"`
	InsecureSkipVerify bool   `json:"insecure_skip_verify,omitempty"`
}

type generatedFile struct {
	path    string
	content []byte
}

// renderRegistries returns registries.yaml and the CA files it refers to.
func renderRegistries(reg *bootstrapv1.Registries, creds map[string]RegistryCredentials) ([]byte, []generatedFile, error) {
	out := registriesFile{}
	for _, m := range reg.Mirrors {
		if m.Registry == "" {
			return nil, nil, fmt.Errorf("registries.mirrors: registry must not be empty")
		}
		if _, dup := out.Mirrors[m.Registry]; dup {
			return nil, nil, fmt.Errorf("registry %q is mirrored twice", m.Registry)
		}
		if out.Mirrors == nil {
			out.Mirrors = map[string]registryMirror{}
		}
		out.Mirrors[m.Registry] = registryMirror{Endpoint: m.Endpoints}
	}
	var caFiles []generatedFile
	for _, c := range reg.Configs {
		if c.Registry == "" {
			return nil, nil, fmt.Errorf("registries.configs: registry must not be empty")
		}
		if _, dup := out.Configs[c.Registry]; dup {
			return nil, nil, fmt.Errorf("registry %q is configured twice", c.Registry)
		}
		cred := creds[c.Registry]
		rc := registryConfig{}
		if c.AuthSecret != nil {
			a := registryAuth{Username: cred.Username, Password: cred.Password, Auth: cred.Auth, IdentityToken: cred.IdentityToken}
			if a == (registryAuth{}) {
				return nil, nil, fmt.Errorf("registry %q: no credentials were given for authSecret %q", c.Registry, c.AuthSecret.Name)
			}
			rc.Auth = &a
		}
		if c.CASecret != nil || c.InsecureSkipVerify {
			rc.TLS = &registryTLS{InsecureSkipVerify: c.InsecureSkipVerify}
		}
		if c.CASecret != nil {
			if cred.CACert == "" {
				return nil, nil, fmt.Errorf("registry %q: no CA certificate was given for caSecret %q", c.Registry, c.CASecret.Name)
			}
			rc.TLS.CAFile = fmt.Sprintf(registryCADirFmt, pathSegment(c.Registry))
			caFiles = append(caFiles, generatedFile{path: rc.TLS.CAFile, content: []byte(cred.CACert)})
		}
		if out.Configs == nil {
			out.Configs = map[string]registryConfig{}
		}
		out.Configs[c.Registry] = rc
	}
	y, err := yaml.Marshal(out)
	if err != nil {
		return nil, nil, fmt.Errorf("marshalling registries.yaml: %w", err)
	}
	return y, caFiles, nil
}

// pathSegment turns a registry host ("host:port", "*") into one directory name.
// It must be injective, or two registries would share (and fight over) one CA
// file, so every byte outside [A-Za-z0-9.-] becomes "_xx" (hex), "_" included;
// a leading "." is escaped too, so that "." and ".." cannot climb out.
func pathSegment(host string) string {
	var b strings.Builder
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.' && i > 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "_%02x", c)
		}
	}
	return b.String()
}
