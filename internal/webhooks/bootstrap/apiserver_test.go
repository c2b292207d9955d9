package bootstrap

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/test/webhooktest"
)

// These tests go through a real kube-apiserver with the generated webhook
// configurations installed, so they also prove the markers, paths and the order of
// schema validation and webhooks.

// badSpec is one invalid input and what the rejection must say. Some inputs never
// reach the webhook because the CRD schema rejects them first (bySchema); they are
// kept so that every rule is shown to hold on a real server, whichever layer holds it.
type badSpec struct {
	name     string
	modify   func(*bootstrapv1.KThreesConfigSpec)
	path     string // relative to the spec
	message  string
	bySchema bool
}

var badSpecs = []badSpec{
	{name: "version not semver", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Version = "v1.031.4+k3s1" },
		path: "version", message: "must be a k3s version such as v1.31.4+k3s1"},
	{name: "version with empty pre-release", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Version = "1.31.4-" },
		path: "version", message: "must be a k3s version"},
	{name: "relative file path", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[1].Path = "etc/motd" },
		path: "files[1].path", message: "must be an absolute path"},
	{name: "dot-dot in file path", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[1].Path = "/etc/../root/x" },
		path: "files[1].path", message: "must not contain .. segments"},
	{name: "unclean file path", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[1].Path = "/etc//x/" },
		path: "files[1].path", message: `must be a clean path without ., empty or trailing segments: write "/etc/x"`},
	{name: "duplicate file path", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[2].Path = s.Files[0].Path },
		path: "files[2].path", message: `files[0].path also writes "/etc/motd"; each file must have a unique path`},
	{name: "secret key missing", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[3].ContentFrom.Secret.Key = "" },
		path: "files[3].contentFrom.secret.key", message: "should be at least 1 chars long", bySchema: true},
	{name: "secret name not a name", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[3].ContentFrom.Secret.Name = "Not_A_Name" },
		path: "files[3].contentFrom.secret.name", message: "must be a valid Secret name"},
	{name: "secret and configMap", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.Files[4].ContentFrom.Secret = bootstrapv1.SecretFileSource{Name: "my-secret", Key: "app.ini"}
	}, path: "files[4].contentFrom", message: "set exactly one of secret and configMap", bySchema: true},
	{name: "configMap name not a name", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[4].ContentFrom.ConfigMap.Name = "Not_A_Name" },
		path: "files[4].contentFrom.configMap.name", message: "must be a valid ConfigMap name"},
	{name: "configMap key not a key", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[4].ContentFrom.ConfigMap.Key = "a/b" },
		path: "files[4].contentFrom.configMap.key", message: "must be a valid ConfigMap key"},
	{name: "cloud-config fragment not a mapping", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.AdditionalUserData.CloudConfig = "- timezone\n" },
		path: "additionalUserData.cloudConfig", message: "must be a YAML mapping of cloud-config keys"},
	{name: "cloud-config fragment sets runcmd", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.AdditionalUserData.CloudConfig = "runcmd:\n- reboot\n"
	}, path: "additionalUserData.cloudConfig", message: `key "runcmd" is written by capk3s: use spec.preK3sCommands and spec.postK3sCommands`},
	{name: "Ignition fragment with cloud-config", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.AdditionalUserData = bootstrapv1.AdditionalUserData{Ignition: `{"ignition":{"version":"3.4.0"}}`}
	}, path: "additionalUserData.ignition", message: "is for format ignition"},
	{name: "Ignition fragment that does not parse", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.Format, s.DiskSetup, s.Mounts = bootstrapv1.Ignition, nil, nil
		s.AdditionalUserData = bootstrapv1.AdditionalUserData{Ignition: `{"ignition":{"version":"3.4.0"},"storage":`}
	}, path: "additionalUserData.ignition", message: "is not an Ignition config"},
	{name: "Ignition fragment replaces the config", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.Format, s.DiskSetup, s.Mounts = bootstrapv1.Ignition, nil, nil
		s.AdditionalUserData = bootstrapv1.AdditionalUserData{Ignition: `{"ignition":{"version":"3.4.0","config":{"replace":{"source":"https://example.test/a.ign"}}}}`}
	}, path: "additionalUserData.ignition", message: "may not set ignition.config.replace"},
	{name: "content and contentFrom", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[3].Content = "x" },
		path: "files[3]", message: "set either content or contentFrom, not both", bySchema: true},
	{name: "unknown encoding", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[0].Encoding = "zstd" },
		path: "files[0].encoding", message: `Unsupported value: "zstd"`, bySchema: true},
	{name: "base64 content not base64", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[1].Content = "%%%" },
		path: "files[1].content", message: "encoding is base64, so content must be standard base64"},
	{name: "permissions not octal", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[0].Permissions = "0888" },
		path: "files[0].permissions", message: "should match '^0?[0-7]{3}$'", bySchema: true},
	{name: "https port zero", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.ServerConfig.HTTPSListenPort = "0" },
		path: "serverConfig.httpsListenPort", message: "must be a TCP port number between 1 and 65535"},
	{name: "advertise port too high", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.ServerConfig.AdvertisePort = "70000" },
		path: "serverConfig.advertisePort", message: "must be a TCP port number between 1 and 65535"},
	{name: "cluster CIDR prefix too long", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.ServerConfig.ClusterCidr = "10.42.0.0/33" },
		path: "serverConfig.clusterCidr", message: `"10.42.0.0/33" is not a CIDR`},
	{name: "two IPv4 service CIDRs", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.ServerConfig.ServiceCidr = "10.43.0.0/16,10.44.0.0/16" },
		path: "serverConfig.serviceCidr", message: "at most one IPv4 and one IPv6"},
	{name: "cluster DNS outside the service CIDR", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.ServerConfig.ClusterDNS = "10.53.0.10" },
		path: "serverConfig.clusterDNS", message: "is not inside spec."},
	{name: "advertise address not an IP", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.ServerConfig.AdvertiseAddress = "server-0" },
		path: "serverConfig.advertiseAddress", message: "must be an IP address"},
	{name: "inline data over budget", modify: func(s *bootstrapv1.KThreesConfigSpec) { s.Files[0].Content = strings.Repeat("x", 600<<10) },
		path: "files[0].content", message: "inline file contents, commands and additional user data add up to"},
	{name: "mirror endpoint not a URL", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.AgentConfig.Registries.Mirrors[0].Endpoints[1] = "mirror.example.com:5000"
	}, path: "agentConfig.registries.mirrors[0].endpoints[1]", message: "must be an http:// or https:// URL with a host"},
	// The schema's listType=map catches an exact repeat; the webhook one in other case.
	{name: "repeated mirror host", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.AgentConfig.Registries.Mirrors[1].Registry = "docker.io"
	}, path: "agentConfig.registries.mirrors[1]", message: `Duplicate value: {"registry":"docker.io"}`, bySchema: true},
	{name: "duplicate mirror host", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.AgentConfig.Registries.Mirrors[1].Registry = "Docker.io"
	}, path: "agentConfig.registries.mirrors[1].registry", message: "agentConfig.registries.mirrors[0].registry already configures this registry"},
	{name: "duplicate config host", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.AgentConfig.Registries.Configs[1].Registry = "MIRROR.example.com:5000"
	}, path: "agentConfig.registries.configs[1].registry", message: "agentConfig.registries.configs[0].registry already configures this registry"},
	{name: "install script sha256 not lowercase hex", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.AgentConfig.InstallScriptSHA256 = strings.ToUpper(s.AgentConfig.InstallScriptSHA256)
	}, path: "agentConfig.installScriptSHA256", message: "should match '^[0-9a-f]{64}$'", bySchema: true},
	{name: "install script over http", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.AgentConfig.InstallScriptURL = "http://mirror.example.com/k3s/install.sh"
	}, path: "agentConfig.installScriptURL", message: "must be an https:// URL with a host"},
	{name: "install script URL with shell characters", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.AgentConfig.InstallScriptURL = "https://mirror.example.com/install.sh;reboot"
	}, path: "agentConfig.installScriptURL", message: "it reaches a shell command line"},
	{name: "artifact URL with trailing slash", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.AgentConfig.ArtifactURL = "https://mirror.example.com/k3s/"
	}, path: "agentConfig.artifactURL", message: "must be a URL prefix without query, fragment or trailing /"},
	{name: "artifact URL air-gapped", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.AgentConfig.AirGapped, s.AgentConfig.InstallScriptURL = true, ""
	}, path: "agentConfig.artifactURL", message: "an air-gapped install skips the download"},
	{name: "air-gapped checksums online", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.AgentConfig.AirGappedChecksums = []bootstrapv1.FileChecksum{{Path: "/usr/local/bin/k3s", SHA256: s.AgentConfig.InstallScriptSHA256}}
	}, path: "agentConfig.airGappedChecksums", message: "only with airGapped"},
	{name: "air-gapped checksum path with shell characters", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.AgentConfig.AirGapped, s.AgentConfig.InstallScriptURL, s.AgentConfig.ArtifactURL = true, "", ""
		s.AgentConfig.AirGappedChecksums = []bootstrapv1.FileChecksum{{Path: "/usr/local/bin/k3s $(id)", SHA256: s.AgentConfig.InstallScriptSHA256}}
	}, path: "agentConfig.airGappedChecksums[0].path", message: "it reaches a shell command line"},
	{name: "air-gapped checksum not a sha256", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.AgentConfig.AirGapped, s.AgentConfig.InstallScriptURL, s.AgentConfig.ArtifactURL = true, "", ""
		s.AgentConfig.AirGappedChecksums = []bootstrapv1.FileChecksum{{Path: "/usr/local/bin/k3s", SHA256: "md5:abc"}}
	}, path: "agentConfig.airGappedChecksums[0].sha256", message: "should match '^[0-9a-f]{64}$'", bySchema: true},
	{name: "extraConfig key not a k3s option", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.ServerConfig.ExtraConfig = extra("flannel_backend", `"vxlan"`)
	}, path: "serverConfig.extraConfig[flannel_backend]", message: "not a k3s server option"},
	{name: "extraConfig server option on agents", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.AgentConfig.ExtraConfig = extra("secrets-encryption", `true`)
	}, path: "agentConfig.extraConfig[secrets-encryption]", message: "not a k3s agent option; server-only options go in serverConfig.extraConfig"},
	{name: "extraConfig option capk3s manages", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.ServerConfig.ExtraConfig = extra("tls-san+", `["x.example.com"]`)
	}, path: "serverConfig.extraConfig[tls-san+]", message: "capk3s sets k3s's tls-san itself; use serverConfig.tlsSan instead"},
	{name: "extraConfig value an object", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.AgentConfig.ExtraConfig = extra("node-ip", `{"v4":"10.0.0.5"}`)
	}, path: "agentConfig.extraConfig[node-ip]", message: "must be a string, a bool, a number or a list of strings, not an object"},
	{name: "extraConfig too many options", modify: func(s *bootstrapv1.KThreesConfigSpec) {
		s.AgentConfig.ExtraConfig = extra()
		for i := range 101 {
			s.AgentConfig.ExtraConfig[fmt.Sprintf("opt-%d", i)] = apiextensionsv1.JSON{Raw: []byte(`true`)}
		}
	}, path: "agentConfig.extraConfig", message: "must have at most 100 items", bySchema: true},
}

func TestConfigRejectsInvalidSpec(t *testing.T) {
	startWebhooks(t)
	for _, tt := range badSpecs {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.NewNamespace(t)
			c := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "config"}, Spec: validSpec()}
			tt.modify(&c.Spec)
			err := env.Client.Create(context.Background(), c)
			checkRejected(t, err, tt, "spec."+tt.path, "validation.kthreesconfig.bootstrap.cluster.x-k8s.io")
			webhooktest.CheckNotStored(t, env.Client, &bootstrapv1.KThreesConfig{}, ns, "config")
		})
	}
}

func TestTemplateRejectsInvalidSpec(t *testing.T) {
	startWebhooks(t)
	for _, tt := range badSpecs {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.NewNamespace(t)
			tmpl := newTemplate(ns, "template")
			tt.modify(&tmpl.Spec.Template.Spec)
			err := env.Client.Create(context.Background(), tmpl)
			checkRejected(t, err, tt, "spec.template.spec."+tt.path, "validation.kthreesconfigtemplate.bootstrap.cluster.x-k8s.io")
			webhooktest.CheckNotStored(t, env.Client, &bootstrapv1.KThreesConfigTemplate{}, ns, "template")
		})
	}
}

// TestConfigRejectsInvalidUpdate: updates are validated like creations, and a rejected
// update leaves the stored object as it was.
func TestConfigRejectsInvalidUpdate(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	c := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "config"}, Spec: validSpec()}
	if err := env.Client.Create(ctx, c); err != nil {
		t.Fatalf("creating a valid config: %v", err)
	}
	stored := c.DeepCopy()

	c.Spec.Files[0].Path = "motd"
	err := env.Client.Update(ctx, c)
	checkRejected(t, err, badSpec{message: "must be an absolute path"}, "spec.files[0].path", "validation.kthreesconfig.bootstrap.cluster.x-k8s.io")

	got := &bootstrapv1.KThreesConfig{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), got); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(got.Spec, stored.Spec) {
		t.Errorf("rejected update changed the stored spec:\n got %+v\nwant %+v", got.Spec, stored.Spec)
	}

	// A valid spec change goes through, and is defaulted on the way.
	got.Spec.Version = "1.32.0+k3s1"
	if err := env.Client.Update(ctx, got); err != nil {
		t.Fatalf("valid update rejected: %v", err)
	}
	if got.Spec.Version != "v1.32.0+k3s1" {
		t.Errorf("updated version %q, want v1.32.0+k3s1", got.Spec.Version)
	}
}

func TestDefaultsVersion(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)

	c := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "config"},
		Spec: bootstrapv1.KThreesConfigSpec{Version: "1.31.4+k3s1"}}
	if err := env.Client.Create(ctx, c); err != nil {
		t.Fatalf("creating config: %v", err)
	}
	gotC := &bootstrapv1.KThreesConfig{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), gotC); err != nil {
		t.Fatal(err)
	}
	if gotC.Spec.Version != "v1.31.4+k3s1" {
		t.Errorf("stored config version %q, want v1.31.4+k3s1", gotC.Spec.Version)
	}

	tmpl := newTemplate(ns, "template")
	tmpl.Spec.Template.Spec = bootstrapv1.KThreesConfigSpec{Version: "1.31.4-rc1+k3s1"}
	if err := env.Client.Create(ctx, tmpl); err != nil {
		t.Fatalf("creating template: %v", err)
	}
	gotT := &bootstrapv1.KThreesConfigTemplate{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(tmpl), gotT); err != nil {
		t.Fatal(err)
	}
	if v := gotT.Spec.Template.Spec.Version; v != "v1.31.4-rc1+k3s1" {
		t.Errorf("stored template version %q, want v1.31.4-rc1+k3s1", v)
	}
}

// TestAcceptsValidConfigUnchanged: a config using files (inline, base64, empty,
// from a Secret), registries, ports and commands is stored exactly as written.
func TestAcceptsValidConfigUnchanged(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	want := validSpec()
	c := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "config"}, Spec: *want.DeepCopy()}
	if err := env.Client.Create(ctx, c); err != nil {
		t.Fatalf("creating a valid config: %v", err)
	}
	got := &bootstrapv1.KThreesConfig{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), got); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(got.Spec, want) {
		t.Errorf("stored spec differs from the one written:\n got %+v\nwant %+v", got.Spec, want)
	}
}

func TestTemplateSpecImmutable(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	tmpl := newTemplate(ns, "template")
	if err := env.Client.Create(ctx, tmpl); err != nil {
		t.Fatalf("creating template: %v", err)
	}
	stored := tmpl.DeepCopy()

	// Any spec change is rejected, even to a valid spec.
	changed := stored.DeepCopy()
	changed.Spec.Template.Spec.Version = "v1.32.0+k3s1"
	changed.Spec.Template.Spec.Files = changed.Spec.Template.Spec.Files[:1]
	err := env.Client.Update(ctx, changed)
	checkRejected(t, err, badSpec{message: immutableTemplateMessage + " (changed: files, version)"},
		"spec.template.spec", "validation.kthreesconfigtemplate.bootstrap.cluster.x-k8s.io")

	// A plain dry run is no exception.
	err = env.Client.Update(ctx, changed.DeepCopy(), client.DryRunAll)
	checkRejected(t, err, badSpec{message: immutableTemplateMessage}, "spec.template.spec", "validation.kthreesconfigtemplate.bootstrap.cluster.x-k8s.io")

	// Cluster API's topology controller dry-runs with its annotation to compute
	// diffs; that must pass, and store nothing.
	topologyDryRun := changed.DeepCopy()
	webhooktest.SetTopologyDryRun(topologyDryRun)
	if err := env.Client.Update(ctx, topologyDryRun, client.DryRunAll); err != nil {
		t.Errorf("topology dry run rejected: %v", err)
	}

	// Metadata stays editable.
	labelled := stored.DeepCopy()
	labelled.Labels = map[string]string{"team": "platform"}
	if err := env.Client.Update(ctx, labelled); err != nil {
		t.Fatalf("metadata-only update rejected: %v", err)
	}

	got := &bootstrapv1.KThreesConfigTemplate{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(tmpl), got); err != nil {
		t.Fatal(err)
	}
	if got.Labels["team"] != "platform" {
		t.Errorf("label not stored: %v", got.Labels)
	}
	if !apiequality.Semantic.DeepEqual(got.Spec, stored.Spec) {
		t.Errorf("template spec changed:\n got %+v\nwant %+v", got.Spec, stored.Spec)
	}
}

func newTemplate(namespace, name string) *bootstrapv1.KThreesConfigTemplate {
	return &bootstrapv1.KThreesConfigTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: bootstrapv1.KThreesConfigTemplateSpec{Template: bootstrapv1.KThreesConfigTemplateResource{
			Spec: validSpec(),
		}},
	}
}

// checkRejected applies webhooktest.CheckRejected to tt at path.
func checkRejected(t *testing.T, err error, tt badSpec, path, webhook string) {
	t.Helper()
	webhooktest.CheckRejected(t, err, webhooktest.Rejection{Path: path, Message: tt.message, Webhook: webhook, BySchema: tt.bySchema})
}
