package cloudinit

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

func minimal(role Role) Input {
	in := Input{Role: role, Version: "v1.35.4+k3s1", Token: testToken}
	if role != ServerInit {
		in.ServerURL = testServerURL
	}
	return in
}

func TestJinjaArrivesVerbatim(t *testing.T) {
	in := minimal(ServerInit)
	in.Files = []File{{Path: "/etc/hostname-template", Content: "{{ ds.meta_data.hostname }}"}}
	in.Spec.PreK3sCommands = []string{"echo {{ ds.meta_data.hostname }}"}
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "{{ ds.meta_data.hostname }}") {
		t.Errorf("raw output lost the template text:\n%s", out)
	}
	p := parse(t, out)
	if f := p.file(t, "/etc/hostname-template"); f.Content != "{{ ds.meta_data.hostname }}" || f.Encoding != "" {
		t.Errorf("file = %+v, want content {{ ds.meta_data.hostname }} unencoded", f)
	}
	if p.RunCmd[0] != "echo {{ ds.meta_data.hostname }}" {
		t.Errorf("runcmd[0] = %q", p.RunCmd[0])
	}
}

func TestRenderErrors(t *testing.T) {
	reg := func(c bootstrapv1.RegistryConfig) bootstrapv1.KThreesConfigSpec {
		return bootstrapv1.KThreesConfigSpec{AgentConfig: bootstrapv1.KThreesAgentConfig{
			Registries: &bootstrapv1.Registries{Configs: []bootstrapv1.RegistryConfig{c}},
		}}
	}
	cases := []struct {
		name    string
		mutate  func(*Input)
		role    Role
		wantErr string
	}{
		{"agent with agent token", func(in *Input) { in.AgentToken = testAgentToken }, Agent, "agentToken is for servers only"},
		{"server-init with server URL", func(in *Input) { in.ServerURL = testServerURL }, ServerInit, "serverURL must be empty for role server-init"},
		{"join without server URL", func(in *Input) { in.ServerURL = "" }, ServerJoin, "serverURL is required for role server-join"},
		{"agent without server URL", func(in *Input) { in.ServerURL = "" }, Agent, "serverURL is required for role agent"},
		{"server URL not https", func(in *Input) { in.ServerURL = "http://cp:6443" }, Agent, `serverURL "http://cp:6443" is not an https://host:port URL`},
		{"unknown role", func(in *Input) { in.Role = "master" }, ServerInit, `unknown role "master"`},
		{"no token", func(in *Input) { in.Token = "" }, ServerInit, "token is required"},
		{"no version", func(in *Input) { in.Version = "" }, ServerInit, "version is required"},
		{"short version", func(in *Input) { in.Version = "1.2" }, ServerInit, `version "v1.2" is not a k3s version`},
		{"injected version", func(in *Input) { in.Version = "v1.2.3; rm -rf /" }, ServerInit, `version "v1.2.3; rm -rf /" is not a k3s version`},
		{"version with quote", func(in *Input) { in.Version = "v1.2.3+k3s1'" }, Agent, "is not a k3s version"},
		{"duplicate user path", func(in *Input) {
			in.Files = []File{{Path: "/etc/a", Content: "1"}, {Path: "/etc//a", Content: "2"}}
		}, ServerInit, `file path "/etc//a" is written twice (also as "/etc/a")`},
		{"user file over config.yaml", func(in *Input) {
			in.Files = []File{{Path: "/etc/rancher/k3s/config.yaml"}}
		}, Agent, `file path "/etc/rancher/k3s/config.yaml" is written twice`},
		{"certificate twice", func(in *Input) {
			in.Certificates = []File{{Path: "/var/lib/rancher/k3s/server/tls/a.crt"}, {Path: "/var/lib/rancher/k3s/server/tls/a.crt"}}
		}, ServerJoin, `file path "/var/lib/rancher/k3s/server/tls/a.crt" is written twice`},
		{"relative path", func(in *Input) { in.Files = []File{{Path: "etc/motd", Content: "x"}} }, ServerInit, `file path "etc/motd" must be absolute`},
		{"directory path", func(in *Input) { in.Files = []File{{Path: "/etc/", Content: "x"}} }, ServerInit, `file path "/etc/" names a directory`},
		{"bad permissions", func(in *Input) { in.Files = []File{{Path: "/etc/x", Permissions: "rw-r--r--"}} }, ServerInit, `file /etc/x: permissions "rw-r--r--" are not an octal mode`},
		{"unknown encoding", func(in *Input) { in.Files = []File{{Path: "/etc/x", Encoding: "zstd"}} }, ServerInit, `file /etc/x: unknown encoding "zstd"`},
		{"binary declared base64", func(in *Input) {
			in.Files = []File{{Path: "/etc/x", Encoding: bootstrapv1.Base64, Content: "\xff\xfe"}}
		}, ServerInit, "file /etc/x: content declared base64 is not base64 text"},
		{"registry auth without credentials", func(in *Input) {
			in.Spec = reg(bootstrapv1.RegistryConfig{Registry: "reg.example.com", AuthSecret: &bootstrapv1.SecretReference{Name: "reg-auth"}})
		}, Agent, `registry "reg.example.com": no credentials were given for authSecret "reg-auth"`},
		{"registry CA without certificate", func(in *Input) {
			in.Spec = reg(bootstrapv1.RegistryConfig{Registry: "reg.example.com", CASecret: &bootstrapv1.SecretReference{Name: "reg-ca"}})
			in.RegistryCredentials = map[string]RegistryCredentials{"reg.example.com": {Username: "u"}}
		}, ServerInit, `registry "reg.example.com": no CA certificate was given for caSecret "reg-ca"`},
		{"registries and privateRegistry", func(in *Input) {
			in.Spec = reg(bootstrapv1.RegistryConfig{Registry: "reg.example.com"})
			in.Spec.AgentConfig.PrivateRegistry = "/etc/reg.yaml"
		}, Agent, "agentConfig.privateRegistry and agentConfig.registries are mutually exclusive"},
		{"certificates for an agent", func(in *Input) {
			in.Certificates = []File{{Path: "/var/lib/rancher/k3s/server/tls/server-ca.crt", Content: "x"}}
		}, Agent, "certificates are for servers only"},
		{"port not numeric", func(in *Input) { in.Spec.ServerConfig.HTTPSListenPort = "64x3" }, ServerInit, `spec.serverConfig.httpsListenPort "64x3" is not a port number`},
		{"port out of range", func(in *Input) { in.Spec.ServerConfig.AdvertisePort = "70000" }, ServerJoin, `spec.serverConfig.advertisePort "70000" is not a port number`},
		{"relative air-gapped script", func(in *Input) {
			in.Spec.AgentConfig.AirGapped = true
			in.Spec.AgentConfig.AirGappedInstallScriptPath = "install.sh"
		}, Agent, `spec.agentConfig.airGappedInstallScriptPath "install.sh" must be absolute`},
		{"command with NUL", func(in *Input) { in.Spec.PostK3sCommands = []string{"ok", "a\x00b"} }, Agent, "spec.postK3sCommands[1] must be UTF-8 text without NUL"},
		{"command with DEL", func(in *Input) { in.Spec.PreK3sCommands = []string{"a\x7fb"} }, ServerJoin, "spec.preK3sCommands[0] must be UTF-8 text without NUL, DEL"},
		{"path with U+FFFE", func(in *Input) { in.Files = []File{{Path: "/a\uFFFE"}} }, ServerJoin, "must be UTF-8 text without NUL"},
		{"owner with newline", func(in *Input) { in.Files = []File{{Path: "/a", Owner: "root\nx"}} }, ServerJoin, `file /a: owner "root\nx" is not a user[:group]`},
		{"command YAML reads as merge key", func(in *Input) { in.Spec.PostK3sCommands = []string{"<<"} }, Agent, `spec.postK3sCommands[0] "<<" would reach cloud-init as a YAML number, boolean or null`},
		{"command YAML reads as a number", func(in *Input) { in.Spec.PreK3sCommands = []string{"0x1F85939849055613594"} }, ServerInit, `spec.preK3sCommands[0] "0x1F85939849055613594" would reach cloud-init`},
		{"owner YAML reads as value key", func(in *Input) { in.Files = []File{{Path: "/a", Owner: "="}} }, ServerInit, `file /a: owner "=" is not a user[:group]`},
		{"command not UTF-8", func(in *Input) { in.Spec.PreK3sCommands = []string{"\xff"} }, Agent, "spec.preK3sCommands[0] must be UTF-8 text without NUL"},
		// A server whose datastore was not resolved must fail, not fall back to a new
		// embedded etcd cluster.
		{"datastore spec without values", func(in *Input) { in.Spec.ServerConfig.Datastore = &bootstrapv1.Datastore{} }, ServerInit,
			"spec.serverConfig.datastore is set but its values were not resolved"},
		{"datastore values without spec", func(in *Input) { in.Datastore = testDatastore() }, ServerJoin,
			"datastore values were given but spec.serverConfig.datastore is not set"},
		{"datastore for an agent", func(in *Input) { in.Datastore = testDatastore() }, Agent,
			"an agent must not receive the datastore credentials"},
		{"empty datastore endpoint", func(in *Input) {
			in.Spec.ServerConfig.Datastore = &bootstrapv1.Datastore{}
			in.Datastore = &Datastore{Endpoint: " "}
		}, ServerInit, "the datastore endpoint is empty"},
		{"datastore certificate without key", func(in *Input) {
			in.Spec.ServerConfig.Datastore = &bootstrapv1.Datastore{}
			in.Datastore = testDatastore()
			in.Datastore.ClientKey = ""
		}, ServerJoin, "the datastore client certificate and key go together"},
		{"datastore server-init with server URL", func(in *Input) {
			in.Spec.ServerConfig.Datastore = &bootstrapv1.Datastore{}
			in.Datastore = testDatastore()
			in.ServerURL = testServerURL
		}, ServerInit, "serverURL must be empty for role server-init"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := minimal(tc.role)
			tc.mutate(&in)
			out, err := Render(in)
			if err == nil {
				t.Fatalf("Render succeeded, want error %q:\n%s", tc.wantErr, out)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %q, want it to contain %q", err, tc.wantErr)
			}
			if out != nil {
				t.Errorf("output = %q, want nil with an error", out)
			}
		})
	}
}

func TestKubeletCloudProvider(t *testing.T) {
	cases := []struct {
		name       string
		sc         bootstrapv1.KThreesServerConfig
		role       Role
		wantKubelt []any
	}{
		{"nil means external", bootstrapv1.KThreesServerConfig{}, ServerInit, anyList("cloud-provider=external", "v=2")},
		{"named", bootstrapv1.KThreesServerConfig{CloudProviderName: ptr.To("aws")}, Agent, anyList("cloud-provider=aws", "v=2")},
		{"empty sets nothing", bootstrapv1.KThreesServerConfig{CloudProviderName: ptr.To("")}, ServerJoin, anyList("v=2")},
		{"deprecated disable wins", bootstrapv1.KThreesServerConfig{CloudProviderName: ptr.To("aws"), DeprecatedDisableExternalCloudProvider: true}, Agent, anyList("v=2")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := minimal(tc.role)
			in.Spec.ServerConfig = tc.sc
			in.Spec.AgentConfig.KubeletArgs = []string{"v=2"}
			out, err := Render(in)
			if err != nil {
				t.Fatal(err)
			}
			if got := parse(t, out).k3sConfig(t)["kubelet-arg"]; !reflect.DeepEqual(got, tc.wantKubelt) {
				t.Errorf("kubelet-arg = %#v, want %#v", got, tc.wantKubelt)
			}
		})
	}
}

func TestDisableCloudControllerAndPrivateRegistry(t *testing.T) {
	in := minimal(ServerJoin)
	in.Spec.ServerConfig.DisableCloudController = ptr.To(true)
	in.Spec.AgentConfig.PrivateRegistry = "/opt/registries.yaml"
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	cfg := parse(t, out).k3sConfig(t)
	if cfg["disable-cloud-controller"] != true || cfg["private-registry"] != "/opt/registries.yaml" {
		t.Errorf("config = %#v, want disable-cloud-controller true and private-registry /opt/registries.yaml", cfg)
	}
}

func TestContentYAMLCannotCarryIsEncoded(t *testing.T) {
	in := minimal(ServerInit)
	in.Files = []File{
		{Path: "/a", Content: "dos\r\nline"},
		{Path: "/b", Content: "\xff\x00binary"},
		{Path: "/c", Content: "text ünïcode\n"},
		{Path: "/d", Content: "="},
		{Path: "/e", Content: "true"}, // quoted by the emitter, so it stays plain
		{Path: "/f", Encoding: bootstrapv1.Base64, Content: "0x1F859398490556135944AB"},
	}
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	p := parse(t, out)
	for path, want := range map[string]writeFile{
		"/a": {Path: "/a", Owner: "root:root", Permissions: "0644", Encoding: "b64", Content: "ZG9zDQpsaW5l"},
		"/b": {Path: "/b", Owner: "root:root", Permissions: "0644", Encoding: "b64", Content: "/wBiaW5hcnk="},
		"/c": {Path: "/c", Owner: "root:root", Permissions: "0644", Content: "text ünïcode\n"},
		"/d": {Path: "/d", Owner: "root:root", Permissions: "0644", Encoding: "b64", Content: "PQ=="},
		"/e": {Path: "/e", Owner: "root:root", Permissions: "0644", Content: "true"},
		"/f": {Path: "/f", Owner: "root:root", Permissions: "0644", Encoding: "b64", Content: "0x1F859398490556135944AB\n"},
	} {
		if got := p.file(t, path); got != want {
			t.Errorf("%s = %+v, want %+v", path, got, want)
		}
	}
}

func TestGzipIsCarriedAsGzB64(t *testing.T) {
	raw := gzipBytes(t, []byte("payload\n"))
	in := minimal(Agent)
	in.Files = []File{{Path: "/x.gz", Encoding: bootstrapv1.Gzip, Content: string(raw)}}
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	f := parse(t, out).file(t, "/x.gz")
	if f.Encoding != "gz+b64" || string(mustB64(t, f.Content)) != string(raw) || string(bytesOnDisk(t, f)) != "payload\n" {
		t.Errorf("file = %+v, want gz+b64 of the given gzip bytes", f)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":             `''`,
		"v1.35.4+k3s1": `'v1.35.4+k3s1'`,
		"it's":         `'it'\''s'`,
		"$(id) `id`":   "'$(id) `id`'",
		"''":           `''\'''\'''`,
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestPathSegment(t *testing.T) {
	for in, want := range map[string]string{
		"registry.example.com:5000": "registry.example.com_3a5000",
		"*":                         "_2a",
		"..":                        "_2e.",
		"a_1":                       "a_5f1",
		"a:1":                       "a_3a1",
		"a/../b":                    "a_2f.._2fb",
	} {
		if got := pathSegment(in); got != want {
			t.Errorf("pathSegment(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMisreadByYAML11(t *testing.T) {
	for s, want := range map[string]bool{
		"=":                            true,
		"<<":                           true,
		"0x1F85939849055613594":        true,
		"0b" + strings.Repeat("1", 70): true,
		// The emitter quotes these itself, so they arrive as strings.
		"true": false, "yes": false, "1": false, "0x1F": false, "~": false, "": false, "1:20": false,
		"echo =": false, "/etc/x": false, "1000:1000": false,
	} {
		if got := misreadByYAML11(s); got != want {
			t.Errorf("misreadByYAML11(%q) = %v, want %v", s, got, want)
		}
	}
}
