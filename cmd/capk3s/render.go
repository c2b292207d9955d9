package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"

	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/bootstrap"
	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/token"
)

// Placeholders stand where a real machine gets the cluster's secrets, so that the
// output can be shared without leaking anything.
const (
	placeholderServerPassphrase = "PLACEHOLDER-server-passphrase"
	placeholderAgentPassphrase  = "PLACEHOLDER-agent-passphrase"
)

func placeholderPEM(what string) string {
	return "-----BEGIN PLACEHOLDER-----\n" + what + "\n-----END PLACEHOLDER-----\n"
}

func runRender(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("capk3s render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "file holding a KThreesConfig, KThreesConfigTemplate or KThreesControlPlane (- for standard input)")
	role := fs.String("role", "", "server-init, server-join or agent (default: server-init for a KThreesControlPlane, agent otherwise)")
	endpoint := fs.String("endpoint", "cluster.example:6443", "the control plane endpoint machines join, host:port")
	version := fs.String("version", "", "k3s version, when the object does not set one")
	format := fs.String("format", "", "cloud-config or ignition (default: the object's spec.format, else cloud-config)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *file == "" || fs.NArg() > 0 {
		_, _ = fmt.Fprintln(stderr, "capk3s render: -f FILE is required, and nothing else may follow the flags")
		fs.Usage()
		return 2
	}
	out, err := render(*file, *role, *endpoint, *version, *format, stdin)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "capk3s render: %v\n", err)
		return 1
	}
	_, _ = stdout.Write(out)
	return 0
}

func render(file, role, endpoint, version, format string, stdin io.Reader) ([]byte, error) {
	raw, err := readInput(file, stdin)
	if err != nil {
		return nil, err
	}
	spec, defaultRole, err := specFrom(raw)
	if err != nil {
		return nil, err
	}
	if role == "" {
		role = string(defaultRole)
	}
	switch f := bootstrapv1.Format(format); f {
	case "":
	case bootstrapv1.CloudConfig, bootstrapv1.Ignition:
		spec.Format = f
	default:
		return nil, fmt.Errorf("--format %q: want cloud-config or ignition", format)
	}
	in := cloudinit.Input{Role: cloudinit.Role(role), Spec: spec, Version: spec.Version}
	if in.Version == "" {
		in.Version = version
	}
	if in.Version == "" {
		return nil, errors.New("no k3s version: the object sets none; pass --version")
	}
	if _, err := k3s.ParseVersion(in.Version); err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(endpoint)
	if err != nil {
		return nil, fmt.Errorf("--endpoint %q: %w", endpoint, err)
	}

	caPEM := placeholderPEM("the cluster's server CA certificate (Secret <cluster>-ca)")
	tok := token.Token{Server: placeholderServerPassphrase, Agent: placeholderAgentPassphrase}
	tokenRole := bootstrap.Agent
	switch in.Role {
	case cloudinit.ServerInit, cloudinit.ServerJoin:
		tokenRole = bootstrap.Server
		in.TLSSANs = []string{host}
		in.Certificates = placeholderCertificates()
	case cloudinit.Agent:
	default:
		return nil, fmt.Errorf("--role %q: want server-init, server-join or agent", role)
	}
	if in.Role != cloudinit.ServerInit {
		in.ServerURL = "https://" + endpoint
	}
	if in.Token, err = tokenFor(tok, tokenRole, []byte(caPEM)); err != nil {
		return nil, err
	}
	if tokenRole == bootstrap.Server {
		in.AgentToken, _ = tok.AgentJoinToken([]byte(caPEM))
	}
	in.Files = placeholderFiles(spec.Files)
	in.RegistryCredentials = placeholderRegistryCredentials(spec.AgentConfig.Registries)
	in.UserPasswords = placeholderPasswords(spec.Users)
	if d := spec.ServerConfig.Datastore; d != nil && tokenRole == bootstrap.Server {
		// Servers on a datastore join through it, as the bootstrap provider renders them.
		in.ServerURL = ""
		in.Datastore = placeholderDatastore(d)
	}
	if tokenRole == bootstrap.Server {
		in.EtcdS3 = placeholderEtcdS3(spec.ServerConfig.Etcd)
	}
	return cloudinit.Render(in)
}

// placeholderEtcdS3 stands for what serverConfig.etcd.snapshots.s3's Secrets hold,
// nil when it names none.
func placeholderEtcdS3(e *bootstrapv1.Etcd) *cloudinit.EtcdS3 {
	if e == nil || e.Snapshots == nil || e.Snapshots.S3 == nil {
		return nil
	}
	s3 := e.Snapshots.S3
	if s3.CredentialsSecret == nil && s3.EndpointCASecret == nil {
		return nil
	}
	out := &cloudinit.EtcdS3{}
	if c := s3.CredentialsSecret; c != nil {
		out.AccessKeyID = "PLACEHOLDER-" + bootstrapv1.EtcdS3AccessKeyIDKey + "-of-Secret-" + c.Name
		out.SecretAccessKey = "PLACEHOLDER-" + bootstrapv1.EtcdS3SecretAccessKeyKey + "-of-Secret-" + c.Name
	}
	if ca := s3.EndpointCASecret; ca != nil {
		out.EndpointCA = placeholderPEM(ca.Key + " of Secret " + ca.Name)
	}
	return out
}

func placeholderDatastore(d *bootstrapv1.Datastore) *cloudinit.Datastore {
	ref := func(r bootstrapv1.SecretKeyReference) string { return r.Key + " of Secret " + r.Name }
	out := &cloudinit.Datastore{Endpoint: "PLACEHOLDER-datastore-endpoint (" + ref(d.EndpointSecret) + ")"}
	if d.CASecret != nil {
		out.CACert = placeholderPEM(ref(*d.CASecret))
	}
	if d.CertSecret != nil && d.KeySecret != nil {
		out.ClientCert, out.ClientKey = placeholderPEM(ref(*d.CertSecret)), placeholderPEM(ref(*d.KeySecret))
	}
	return out
}

func tokenFor(tok token.Token, role bootstrap.Role, caPEM []byte) (string, error) {
	if role == bootstrap.Server {
		return tok.ServerJoinToken(caPEM)
	}
	return tok.AgentJoinToken(caPEM)
}

func readInput(file string, stdin io.Reader) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(file)
}

// specFrom reads the KThreesConfigSpec out of any object that carries one. Unknown
// fields are errors, so that a typo does not silently vanish from the preview.
func specFrom(raw []byte) (bootstrapv1.KThreesConfigSpec, cloudinit.Role, error) {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(raw, &meta); err != nil {
		return bootstrapv1.KThreesConfigSpec{}, "", fmt.Errorf("not YAML: %w", err)
	}
	switch meta.Kind {
	case "KThreesConfig":
		var o bootstrapv1.KThreesConfig
		err := yaml.UnmarshalStrict(raw, &o)
		return o.Spec, cloudinit.Agent, err
	case "KThreesConfigTemplate":
		var o bootstrapv1.KThreesConfigTemplate
		err := yaml.UnmarshalStrict(raw, &o)
		return o.Spec.Template.Spec, cloudinit.Agent, err
	case "KThreesControlPlane":
		var o controlplanev1.KThreesControlPlane
		err := yaml.UnmarshalStrict(raw, &o)
		spec := o.Spec.KThreesConfigSpec
		if spec.Version == "" {
			spec.Version = o.Spec.Version
		}
		return spec, cloudinit.ServerInit, err
	}
	return bootstrapv1.KThreesConfigSpec{}, "", fmt.Errorf("kind %q: want KThreesConfig, KThreesConfigTemplate or KThreesControlPlane", meta.Kind)
}

func placeholderCertificates() []cloudinit.File {
	var files []cloudinit.File
	for _, cert := range k3s.ClusterCertificates() {
		name := string(cert.Purpose)
		files = append(files,
			cloudinit.File{Path: cert.CertFile, Permissions: "0644", Content: placeholderPEM("CA certificate of Secret <cluster>-" + name)},
			cloudinit.File{Path: cert.KeyFile, Permissions: "0600", Content: placeholderPEM("CA key of Secret <cluster>-" + name)},
		)
	}
	return files
}

func placeholderFiles(files []bootstrapv1.File) []cloudinit.File {
	out := make([]cloudinit.File, 0, len(files))
	for _, f := range files {
		file := cloudinit.File{Path: f.Path, Owner: f.Owner, Permissions: f.Permissions, Encoding: f.Encoding, Content: f.Content}
		switch {
		case f.ContentFrom == nil:
		case f.ContentFrom.ConfigMap.Name != "":
			// Not known offline either; a ConfigMap file keeps inline content's
			// default permissions (0644), as the controller's.
			file.Encoding = ""
			file.Content = fmt.Sprintf("PLACEHOLDER: content of ConfigMap %s, key %s\n", f.ContentFrom.ConfigMap.Name, f.ContentFrom.ConfigMap.Key)
		default:
			// The Secret's value is not known offline; a plain-text note stands in for it.
			// It keeps the Secret file's default permissions (0600), as the controller's.
			file.FromSecret = true
			file.Encoding = ""
			file.Content = fmt.Sprintf("PLACEHOLDER: content of Secret %s, key %s\n", f.ContentFrom.Secret.Name, f.ContentFrom.Secret.Key)
		}
		out = append(out, file)
	}
	return out
}

func placeholderRegistryCredentials(regs *bootstrapv1.Registries) map[string]cloudinit.RegistryCredentials {
	if regs == nil {
		return nil
	}
	out := map[string]cloudinit.RegistryCredentials{}
	for _, rc := range regs.Configs {
		var creds cloudinit.RegistryCredentials
		if rc.AuthSecret != nil {
			creds.Username = "PLACEHOLDER-username-from-" + rc.AuthSecret.Name
			creds.Password = "PLACEHOLDER-password-from-" + rc.AuthSecret.Name
		}
		if rc.CASecret != nil {
			creds.CACert = placeholderPEM("ca.crt of Secret " + rc.CASecret.Name)
		}
		out[rc.Registry] = creds
	}
	return out
}

// placeholderPasswords stand for the hashes of users' passwdFrom Secrets, shaped
// as a crypt(3) hash so that the renderer takes them, and naming the Secret key.
func placeholderPasswords(users []bootstrapv1.User) map[string]string {
	out := map[string]string{}
	for _, u := range users {
		if u.PasswdFrom != nil {
			out[u.Name] = "$6$PLACEHOLDER$hash-from-Secret-" + u.PasswdFrom.Secret.Name + "-key-" + u.PasswdFrom.Secret.Key
		}
	}
	return out
}
