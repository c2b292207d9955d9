package bootstrap

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// validSpec is a spec that uses every field the rules look at, all correctly.
func validSpec() bootstrapv1.KThreesConfigSpec {
	return bootstrapv1.KThreesConfigSpec{
		Version: "v1.31.4+k3s1",
		Files: []bootstrapv1.File{
			{Path: "/etc/motd", Content: "hello", Permissions: "0644", Owner: "root:root"},
			{Path: "/etc/rancher/k3s/extra.yaml", Encoding: bootstrapv1.Base64, Content: "aGVsbG8K", Permissions: "600"},
			{Path: "/var/lib/marker"},
			{Path: "/etc/secret.conf", ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretFileSource{Name: "my-secret", Key: "secret.conf"}}},
			{Path: "/etc/app.ini", ContentFrom: &bootstrapv1.FileSource{ConfigMap: bootstrapv1.ConfigMapFileSource{Name: "app", Key: "app.ini"}}},
		},
		PreK3sCommands:  []string{"echo pre"},
		PostK3sCommands: []string{"echo post"},
		BootCommands:    validOSSetup().BootCommands,
		NTP:             validOSSetup().NTP,
		Users:           validOSSetup().Users,
		DiskSetup:       validOSSetup().DiskSetup,
		Mounts:          validOSSetup().Mounts,
		ServerConfig: bootstrapv1.KThreesServerConfig{
			HTTPSListenPort: "6443", AdvertisePort: "443",
			BindAddress: "0.0.0.0", AdvertiseAddress: "10.0.0.10",
			ClusterCidr: "10.42.0.0/16,2001:db8:42::/56", ServiceCidr: "10.43.0.0/16,2001:db8:43::/112", ClusterDNS: "10.43.0.10",
			ExtraConfig: extra("flannel-backend", `"wireguard-native"`, "secrets-encryption", `true`, "etcd-expose-metrics", `true`),
		},
		AgentConfig: bootstrapv1.KThreesAgentConfig{ExtraConfig: extra("node-external-ip+", `["203.0.113.5"]`),
			InstallScriptURL:    "https://mirror.example.com/k3s/install.sh",
			InstallScriptSHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			ArtifactURL:         "https://mirror.example.com/k3s/releases",
			Registries: &bootstrapv1.Registries{
				Mirrors: []bootstrapv1.RegistryMirror{
					{Registry: "docker.io", Endpoints: []string{"https://mirror.example.com:5000", "http://10.0.0.1/v2"}},
					{Registry: "*", Endpoints: []string{"https://fallback.example.com"}},
				},
				Configs: []bootstrapv1.RegistryConfig{
					{Registry: "mirror.example.com:5000", AuthSecret: &bootstrapv1.SecretReference{Name: "mirror-auth"}, CASecret: &bootstrapv1.SecretReference{Name: "mirror-ca"}},
					{Registry: "docker.io", InsecureSkipVerify: true},
				},
			}},
	}
}

func TestValidateSpec(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*bootstrapv1.KThreesConfigSpec)
		// want lists, per expected error, its field path and a fragment of its message;
		// empty means the spec is valid.
		want []wantErr
	}{
		{name: "valid spec", modify: func(*bootstrapv1.KThreesConfigSpec) {}},
		{name: "empty spec", modify: func(s *bootstrapv1.KThreesConfigSpec) { *s = bootstrapv1.KThreesConfigSpec{} }},

		// version
		{name: "version without v", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Version = "1.31.4+k3s1" }},
		{name: "plain version", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Version = "v1.31.4" }},
		{name: "release candidate", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Version = "v1.31.4-rc1+k3s1" }},
		{name: "version with leading zero", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Version = "v1.031.4+k3s1" },
			want: []wantErr{{"spec.version", "must be a k3s version such as v1.31.4+k3s1"}}},
		{name: "version with empty pre-release", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Version = "v1.31.4-" },
			want: []wantErr{{"spec.version", "semantic version"}}},
		{name: "version with two build parts", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Version = "v1.31.4+k3s1+k3s2" },
			want: []wantErr{{"spec.version", "must be a k3s version"}}},
		{name: "version not semver", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Version = "latest" },
			want: []wantErr{{"spec.version", "must be a k3s version"}}},

		// file paths
		{name: "relative path", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[1].Path = "etc/motd" },
			want: []wantErr{{"spec.files[1].path", "must be an absolute path"}}},
		{name: "missing path", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[1].Path = "" },
			want: []wantErr{{"spec.files[1].path", "Required value"}}},
		{name: "dot-dot segment", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[0].Path = "/etc/../root/.ssh/authorized_keys" },
			want: []wantErr{{"spec.files[0].path", "must not contain .. segments"}}},
		{name: "trailing dot-dot", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[0].Path = "/etc/.." },
			want: []wantErr{{"spec.files[0].path", "must not contain .. segments"}}},
		{name: "dot-dot inside a name is fine", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[0].Path = "/etc/a..b" }},
		{name: "double slash", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[0].Path = "/etc//motd" },
			want: []wantErr{{"spec.files[0].path", `must be a clean path without ., empty or trailing segments: write "/etc/motd"`}}},
		{name: "trailing slash", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[0].Path = "/etc/motd/" },
			want: []wantErr{{"spec.files[0].path", "must be a clean path"}}},
		{name: "dot segment", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[0].Path = "/etc/./motd" },
			want: []wantErr{{"spec.files[0].path", "must be a clean path"}}},
		{name: "newline in path", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[0].Path = "/etc/motd\nruncmd" },
			want: []wantErr{{"spec.files[0].path", "control characters"}}},
		{name: "duplicate path", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[2].Path = "/etc/motd" },
			want: []wantErr{{"spec.files[2].path", `Duplicate value: "/etc/motd": spec.files[0].path also writes "/etc/motd"`}}},
		{name: "duplicate path spelled differently", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[3].Path = "/etc//motd" },
			want: []wantErr{{"spec.files[3].path", "must be a clean path"}, {"spec.files[3].path", "spec.files[0].path also writes"}}},

		// content and contentFrom
		{name: "content and contentFrom", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[3].Content = "x" },
			want: []wantErr{{"spec.files[3].contentFrom", "set either content or contentFrom, not both"}}},
		{name: "neither content nor contentFrom", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[0].Content = "" }},
		{name: "contentFrom without secret name", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[3].ContentFrom.Secret.Name = "" },
			want: []wantErr{{"spec.files[3].contentFrom.secret.name", "Required value"}}},
		{name: "contentFrom without key", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[3].ContentFrom.Secret.Key = "" },
			want: []wantErr{{"spec.files[3].contentFrom.secret.key", "Required value"}}},
		{name: "contentFrom with a bad secret name", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[3].ContentFrom.Secret.Name = "My_Secret" },
			want: []wantErr{{"spec.files[3].contentFrom.secret.name", "must be a valid Secret name"}}},
		{name: "contentFrom with a bad key", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[3].ContentFrom.Secret.Key = "a/b" },
			want: []wantErr{{"spec.files[3].contentFrom.secret.key", "must be a valid Secret data key"}}},

		// encoding
		{name: "unknown encoding", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[0].Encoding = "zstd" },
			want: []wantErr{{"spec.files[0].encoding", `Unsupported value: "zstd"`}}},
		{name: "base64 content not base64", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[1].Content = "not base64!" },
			want: []wantErr{{"spec.files[1].content", "encoding is base64, so content must be standard base64"}}},
		{name: "gzip+base64 content not base64", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.Files[1].Encoding = bootstrapv1.GzipBase64
			s.Files[1].Content = "aGVsbG8"
		}, want: []wantErr{{"spec.files[1].content", "encoding is gzip+base64"}}},
		{name: "wrapped base64", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[1].Content = "aGVs\nbG8K\n" }},
		{name: "base64 with contentFrom is not decoded", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[3].Encoding = bootstrapv1.Base64 }},
		{name: "gzip content is not base64-checked", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.Files[0].Encoding = bootstrapv1.Gzip
			s.Files[0].Content = "not base64!"
		}},

		// permissions
		{name: "permissions not octal", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[0].Permissions = "0855" },
			want: []wantErr{{"spec.files[0].permissions", "must be an octal file mode"}}},
		{name: "permissions too long", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[0].Permissions = "10644" },
			want: []wantErr{{"spec.files[0].permissions", "must be an octal file mode"}}},
		{name: "symbolic permissions", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[0].Permissions = "rw-r--r--" },
			want: []wantErr{{"spec.files[0].permissions", "must be an octal file mode"}}},

		// ports
		{name: "port zero", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.ServerConfig.HTTPSListenPort = "0" },
			want: []wantErr{{"spec.serverConfig.httpsListenPort", "must be a TCP port number between 1 and 65535"}}},
		{name: "port too high", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.ServerConfig.AdvertisePort = "65536" },
			want: []wantErr{{"spec.serverConfig.advertisePort", "between 1 and 65535"}}},
		{name: "port not a number", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.ServerConfig.AdvertisePort = "https" },
			want: []wantErr{{"spec.serverConfig.advertisePort", "between 1 and 65535"}}},
		{name: "highest port", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.ServerConfig.AdvertisePort = "65535" }},

		// registries
		{name: "mirror endpoint without scheme", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.AgentConfig.Registries.Mirrors[0].Endpoints[1] = "mirror.example.com"
		}, want: []wantErr{{"spec.agentConfig.registries.mirrors[0].endpoints[1]", "must be an http:// or https:// URL"}}},
		{name: "mirror endpoint with another scheme", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.AgentConfig.Registries.Mirrors[1].Endpoints[0] = "oci://mirror.example.com"
		}, want: []wantErr{{"spec.agentConfig.registries.mirrors[1].endpoints[0]", "must be an http:// or https:// URL"}}},
		{name: "mirror endpoint without host", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.AgentConfig.Registries.Mirrors[1].Endpoints[0] = "https:///v2"
		}, want: []wantErr{{"spec.agentConfig.registries.mirrors[1].endpoints[0]", "with a host"}}},
		{name: "mirror without endpoints", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.AgentConfig.Registries.Mirrors[1].Endpoints = nil
		}, want: []wantErr{{"spec.agentConfig.registries.mirrors[1].endpoints", "Required value"}}},
		{name: "duplicate mirror", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.AgentConfig.Registries.Mirrors[1].Registry = "Docker.IO"
		}, want: []wantErr{{"spec.agentConfig.registries.mirrors[1].registry", "spec.agentConfig.registries.mirrors[0].registry already configures this registry"}}},
		{name: "duplicate config", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.AgentConfig.Registries.Configs[1].Registry = "mirror.example.com:5000"
		}, want: []wantErr{{"spec.agentConfig.registries.configs[1].registry", "spec.agentConfig.registries.configs[0].registry already configures"}}},
		{name: "same host as mirror and config", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.AgentConfig.Registries.Configs[0].Registry = "docker.io"
			s.AgentConfig.Registries.Configs[1].Registry = "quay.io"
		}},
		{name: "registry config with empty secret name", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.AgentConfig.Registries.Configs[0].CASecret.Name = ""
		}, want: []wantErr{{"spec.agentConfig.registries.configs[0].caSecret.name", "Required value"}}},

		// several at once: every error is reported, not just the first.
		{name: "errors accumulate", modify: func(s *bootstrapv1.KThreesConfigSpec) {
			s.Version = "v1.2"
			s.Files[0].Path = "motd"
			s.ServerConfig.HTTPSListenPort = "99999"
		}, want: []wantErr{
			{"spec.version", "must be a k3s version"},
			{"spec.files[0].path", "must be an absolute path"},
			{"spec.serverConfig.httpsListenPort", "between 1 and 65535"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := validSpec()
			tt.modify(&spec)
			checkErrors(t, validateSpec(&spec, field.NewPath("spec")), tt.want)
		})
	}
}

// TestValidateSpecPath checks that errors carry the path the caller gives, as for a
// template's spec.template.spec.
func TestValidateSpecPath(t *testing.T) {
	spec := validSpec()
	spec.Files[0].Path = "motd"
	checkErrors(t, ValidateSpec(&spec, field.NewPath("spec", "template", "spec")),
		[]wantErr{{"spec.template.spec.files[0].path", "must be an absolute path"}})
}

// TestBase64ErrorOmitsContent: inline content may be a secret, so it must not be
// echoed in the error.
func TestBase64ErrorOmitsContent(t *testing.T) {
	spec := validSpec()
	spec.Files[1].Content = "hunter2 is my password"
	errs := validateSpec(&spec, field.NewPath("spec"))
	if len(errs) != 1 {
		t.Fatalf("want one error, got %v", errs)
	}
	if strings.Contains(errs[0].Error(), "hunter2") {
		t.Errorf("error echoes the content: %v", errs[0])
	}
}

func TestDefaultSpec(t *testing.T) {
	for in, want := range map[string]string{
		"":                 "",
		"1.31.4+k3s1":      "v1.31.4+k3s1",
		"v1.31.4+k3s1":     "v1.31.4+k3s1",
		"1.31.4-rc1+k3s1":  "v1.31.4-rc1+k3s1",
		"v1.31.4-rc1+k3s1": "v1.31.4-rc1+k3s1",
		// Stored as written but for the "v", not trimmed: the schema's pattern
		// refuses it (the control plane's own version is trimmed instead).
		" 1.31.4+k3s1":  "v 1.31.4+k3s1",
		"v1.31.4+k3s1 ": "v1.31.4+k3s1 ",
	} {
		spec := validSpec()
		spec.Version = in
		expected := validSpec()
		expected.Version = want

		DefaultSpec(&spec)
		if spec.Version != want {
			t.Errorf("DefaultSpec(%q): version %q, want %q", in, spec.Version, want)
		}
		// Idempotent, and nothing but the version changes.
		DefaultSpec(&spec)
		if !equalSpecs(spec, expected) {
			t.Errorf("DefaultSpec(%q) changed more than the version: %+v", in, spec)
		}
	}
}

type wantErr struct {
	path, message string
}

// checkErrors matches errors and expectations one to one, in order.
func checkErrors(t *testing.T, errs field.ErrorList, want []wantErr) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(want), errs.ToAggregate())
	}
	for i, w := range want {
		if errs[i].Field != w.path {
			t.Errorf("error %d: field %q, want %q (%v)", i, errs[i].Field, w.path, errs[i])
		}
		if !strings.Contains(errs[i].Error(), w.message) {
			t.Errorf("error %d: %q does not contain %q", i, errs[i].Error(), w.message)
		}
	}
}
