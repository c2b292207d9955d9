package cloudinit

import (
	"errors"
	"fmt"
	"net/url"

	"k8s.io/apimachinery/pkg/util/validation/field"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// Role is what the machine becomes, which decides the k3s subcommand and which
// config keys apply.
type Role string

const (
	// ServerInit is the first server: it starts the embedded etcd (cluster-init), or
	// on an external datastore stores the cluster's bootstrap data there, and so has
	// no server to join.
	ServerInit Role = "server-init"
	// ServerJoin is any further server; it joins Input.ServerURL, or on an external
	// datastore the datastore itself.
	ServerJoin Role = "server-join"
	// Agent runs workloads only; it joins Input.ServerURL.
	Agent Role = "agent"
)

// File is a file already resolved by the caller (contentFrom Secrets read, CA
// material fetched), so that rendering needs no API access.
type File struct {
	Path        string
	Owner       string // "" means "root:root"
	Permissions string // octal; "" means "0644", or "0600" if FromSecret
	// Encoding is how Content is already encoded, as the user declared it.
	Encoding bootstrapv1.Encoding
	Content  string
	// FromSecret says Content was read from a Secret (contentFrom.secret): the user
	// keeps it secret, so the machine does too unless Permissions says otherwise.
	FromSecret bool
}

// RegistryCredentials are the values read from the Secrets that one
// spec.agentConfig.registries.configs entry references.
type RegistryCredentials struct {
	Username, Password, Auth, IdentityToken string
	// CACert is a PEM bundle; it is written to its own 0600 file and referenced as
	// ca_file, because k3s takes a path, not inline PEM.
	CACert string
}

// Input is everything Render needs. Render reads in.Files, never in.Spec.Files:
// only the caller can resolve contentFrom.
type Input struct {
	Role Role
	Spec bootstrapv1.KThreesConfigSpec
	// Version is the k3s version, e.g. "v1.35.4+k3s1"; a missing leading "v" is added.
	Version string
	// ServerURL is "https://host:port"; required for ServerJoin and Agent, empty for
	// ServerInit.
	ServerURL string
	// Token is k3s's "token", already in secure form.
	Token string
	// AgentToken is k3s's "agent-token"; servers only.
	AgentToken string
	// TLSSANs are SANs the caller adds (the control-plane endpoint host). They come
	// before spec.serverConfig.tlsSan; duplicates are dropped. Ignored for agents,
	// like the rest of serverConfig.
	TLSSANs []string
	// Certificates are the cluster CA files for servers. Any *.key path is written
	// 0600 whatever Permissions says.
	Certificates []File
	// Files are the user's files, resolved, in spec order.
	Files []File
	// RegistryCredentials are keyed by registry host, as in
	// spec.agentConfig.registries.configs.
	RegistryCredentials map[string]RegistryCredentials
	// InstallScriptURL is where the k3s install script is fetched from when online
	// (default DefaultInstallScriptURL).
	InstallScriptURL string
	// Datastore is the resolved spec.serverConfig.datastore; servers only, and
	// required when the spec sets one.
	Datastore *Datastore
	// UserPasswords are the crypt(3) hashes read from spec.users[].passwdFrom,
	// keyed by user name; every user with passwdFrom needs one.
	UserPasswords map[string]string
	// EtcdS3 is what spec.serverConfig.etcd.snapshots.s3's Secrets hold; servers
	// only, and required when the spec names such Secrets.
	EtcdS3 *EtcdS3
}

// Render returns the bootstrap data that installs and configures k3s for in.Role,
// in the format in.Spec.Format names (cloud-config when empty). Both formats come
// from one plan, so they carry the same files and commands.
func Render(in Input) ([]byte, error) {
	encode, err := encoderFor(in.Spec.Format)
	if err != nil {
		return nil, err
	}
	if in.Spec.Format == bootstrapv1.Ignition {
		// Checked on the spec, as the webhook does, so that both name the same fields.
		if errs := IgnitionOSSetupErrors(&in.Spec, field.NewPath("spec")); len(errs) > 0 {
			return nil, errs.ToAggregate()
		}
	}
	// Checked on the spec, as the webhook does; the encoders merge what passes.
	if errs := AdditionalUserDataErrors(&in.Spec, field.NewPath("spec", "additionalUserData")); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	p, err := newPlan(in)
	if err != nil {
		return nil, err
	}
	return encode(p)
}

// FormatOf is the format Render writes for spec, as the bootstrap contract's
// "format" Secret key spells it.
func FormatOf(spec bootstrapv1.KThreesConfigSpec) bootstrapv1.Format {
	if spec.Format == "" {
		return bootstrapv1.CloudConfig
	}
	return spec.Format
}

func encoderFor(f bootstrapv1.Format) (func(*plan) ([]byte, error), error) {
	switch f {
	case "", bootstrapv1.CloudConfig:
		return encodeCloudConfig, nil
	case bootstrapv1.Ignition:
		return encodeIgnition, nil
	default:
		return nil, fmt.Errorf("spec.format %q: want %s or %s", f, bootstrapv1.CloudConfig, bootstrapv1.Ignition)
	}
}

// checkInput rejects combinations that would give a machine that cannot join, or
// that would hand server secrets to an agent.
func checkInput(in Input) error {
	if in.Token == "" {
		// Without it k3s would invent a token that no other machine knows.
		return errors.New("token is required")
	}
	switch in.Role {
	case ServerInit:
		if in.ServerURL != "" {
			return fmt.Errorf("serverURL must be empty for role %s: the first server starts the cluster", in.Role)
		}
	case ServerJoin, Agent:
		if in.ServerURL == "" && in.Role == ServerJoin && in.Datastore != nil {
			// Servers on a datastore join through it.
			break
		}
		if in.ServerURL == "" {
			return fmt.Errorf("serverURL is required for role %s", in.Role)
		}
		u, err := url.Parse(in.ServerURL)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("serverURL %q is not an https://host:port URL", in.ServerURL)
		}
	default:
		return fmt.Errorf("unknown role %q", in.Role)
	}
	if in.Role == Agent {
		if in.AgentToken != "" {
			return errors.New("agentToken is for servers only; an agent gets the agent token as its token")
		}
		if len(in.Certificates) > 0 {
			return errors.New("certificates are for servers only; an agent must not receive CA material")
		}
	}
	if err := checkDatastore(in); err != nil {
		return err
	}
	if err := checkEtcd(in); err != nil {
		return err
	}
	if err := checkRestore(in); err != nil {
		return err
	}
	ac := in.Spec.AgentConfig
	if ac.PrivateRegistry != "" && ac.Registries != nil {
		return errors.New("agentConfig.privateRegistry and agentConfig.registries are mutually exclusive")
	}
	return nil
}
