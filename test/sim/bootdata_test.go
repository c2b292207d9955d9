package sim

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/token"
)

const (
	testVersion  = "v1.35.4+k3s1"
	testEndpoint = "https://cp.example.com:6443"
)

// clusterCAs is a set of a cluster's CAs as internal/bootstrap hands them to the
// renderer.
type clusterCAs struct {
	files    []cloudinit.File
	serverCA []byte
}

// generateCAs makes real CA key pairs, the way capk3s creates a cluster's CAs, and
// turns them into renderer files the way internal/bootstrap does.
func generateCAs() (clusterCAs, error) {
	certs := k3s.ClusterCertificates()
	if err := certs.Generate(); err != nil {
		return clusterCAs{}, err
	}
	var c clusterCAs
	for _, cert := range certs {
		c.files = append(c.files,
			cloudinit.File{Path: cert.CertFile, Owner: "root:root", Permissions: "0644", Content: string(cert.KeyPair.Cert)},
			cloudinit.File{Path: cert.KeyFile, Owner: "root:root", Permissions: "0600", Content: string(cert.KeyPair.Key)},
		)
	}
	c.serverCA = certs.GetByPurpose(secret.ClusterCA).KeyPair.Cert
	return c, nil
}

// Two clusters' CAs, generated once for all tests (RSA key generation is slow).
var (
	theCAs   = sync.OnceValues(generateCAs)
	otherCAs = sync.OnceValues(generateCAs)
)

func mustCAs(t testing.TB, get func() (clusterCAs, error)) clusterCAs {
	t.Helper()
	c, err := get()
	if err != nil {
		t.Fatalf("generating CAs: %v", err)
	}
	return c
}

func mustRender(t testing.TB, in cloudinit.Input) []byte {
	t.Helper()
	out, err := cloudinit.Render(in)
	if err != nil {
		t.Fatalf("cloudinit.Render: %v", err)
	}
	return out
}

// parseRendered reads rendered bootstrap data with parseCloudConfig, and returns the
// data too, for checkJoin.
func parseRendered(t testing.TB, data []byte) (*bootData, []byte) {
	t.Helper()
	b, err := parseCloudConfig(data)
	if err != nil {
		t.Fatalf("parseCloudConfig on rendered data: %v\n%s", err, data)
	}
	return b, data
}

func gzipBase64(t testing.TB, s string) string {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// minimal is hand-written bootstrap data for an agent, with extra write_files
// entries and runcmd lines spliced in.
func minimal(files, cmds string) string {
	return "#cloud-config\n" +
		"write_files:\n" +
		"- path: /etc/rancher/k3s/config.yaml\n" +
		"  permissions: \"0600\"\n" +
		"  content: |\n" +
		"    server: https://cp.example.com:6443\n" +
		"    token: s3cr3t\n" +
		files +
		"runcmd:\n" +
		"- curl -sfL 'https://get.k3s.io' | INSTALL_K3S_VERSION='v1.35.4+k3s1' sh -s - agent\n" +
		cmds
}

func TestParseCloudConfigErrors(t *testing.T) {
	t.Parallel()
	installServer := "- curl -sfL 'https://get.k3s.io' | INSTALL_K3S_VERSION='v1.35.4+k3s1' sh -s - server\n"
	tests := []struct {
		name    string
		data    string
		wantErr string
	}{
		{
			name:    "no header",
			data:    strings.TrimPrefix(minimal("", ""), "#cloud-config\n"),
			wantErr: "does not start with #cloud-config",
		},
		{
			name:    "header not on the first line",
			data:    "\n" + minimal("", ""),
			wantErr: "does not start with #cloud-config",
		},
		{
			name:    "jinja template header",
			data:    "## template: jinja\n" + minimal("", ""),
			wantErr: "does not start with #cloud-config",
		},
		{
			name:    "empty data",
			data:    "",
			wantErr: "does not start with #cloud-config",
		},
		{
			name:    "bad YAML",
			data:    "#cloud-config\nruncmd: [echo hi\n",
			wantErr: "cloud-config:",
		},
		{
			name:    "unknown top-level key",
			data:    minimal("", "") + "apt:\n  preserve_sources_list: true\n",
			wantErr: `unknown field "apt"`,
		},
		{
			name:    "unknown write_files key",
			data:    minimal("- path: /etc/motd\n  content: hi\n  mode: '0644'\n", ""),
			wantErr: `unknown field "mode"`,
		},
		{
			name:    "duplicate top-level key",
			data:    minimal("", "") + "runcmd:\n- echo again\n",
			wantErr: "cloud-config:",
		},
		{
			name:    "write_files entry without path",
			data:    minimal("- content: hi\n", ""),
			wantErr: "write_files[1] has no path",
		},
		{
			name:    "unknown encoding",
			data:    minimal("- path: /etc/motd\n  encoding: rot13\n  content: uv\n", ""),
			wantErr: `write_files /etc/motd: unknown encoding "rot13"`,
		},
		{
			name:    "b64 content that is not base64",
			data:    minimal("- path: /etc/motd\n  encoding: b64\n  content: '!!!'\n", ""),
			wantErr: "write_files /etc/motd:",
		},
		{
			name:    "gzip+base64 content that is not gzip",
			data:    minimal("- path: /etc/motd\n  encoding: gzip+base64\n  content: aGVsbG8=\n", ""),
			wantErr: "write_files /etc/motd:",
		},
		{
			name:    "duplicate path",
			data:    minimal("- path: /etc/motd\n  content: a\n- path: /etc/motd\n  content: b\n", ""),
			wantErr: "write_files writes /etc/motd twice",
		},
		{
			name:    "k3s config written twice",
			data:    minimal("- path: /etc/rancher/k3s/config.yaml\n  content: 'token: x'\n", ""),
			wantErr: "write_files writes /etc/rancher/k3s/config.yaml twice",
		},
		{
			name: "no install command",
			data: "#cloud-config\nwrite_files:\n- path: /etc/rancher/k3s/config.yaml\n  content: 'token: x'\n" +
				"runcmd:\n- echo hi\n- systemctl is-active --quiet k3s && echo success > /run/cluster-api/bootstrap-success.complete\n",
			wantErr: "no command installs k3s",
		},
		{
			name:    "no runcmd at all",
			data:    "#cloud-config\nwrite_files:\n- path: /etc/rancher/k3s/config.yaml\n  content: 'token: x'\n",
			wantErr: "no command installs k3s",
		},
		{
			name:    "two install commands",
			data:    minimal("", installServer),
			wantErr: "2 commands install k3s; one is expected",
		},
		{
			name:    "install command ending in neither server nor agent",
			data:    minimal("", "- INSTALL_K3S_VERSION='v1.35.4+k3s1' sh /opt/install.sh --debug\n"),
			wantErr: `ends in "--debug"`,
		},
		{
			name:    "missing k3s config",
			data:    "#cloud-config\nwrite_files:\n- path: /etc/motd\n  content: hi\nruncmd:\n" + installServer,
			wantErr: "/etc/rancher/k3s/config.yaml is not written",
		},
		{
			name:    "k3s config is not YAML",
			data:    "#cloud-config\nwrite_files:\n- path: /etc/rancher/k3s/config.yaml\n  content: 'token: [x'\nruncmd:\n" + installServer,
			wantErr: "/etc/rancher/k3s/config.yaml:",
		},
		{
			name:    "runcmd entry that is a list",
			data:    minimal("", "- [sh, -c, 'echo hi']\n"),
			wantErr: "runcmd[1] is []interface {}, not a shell command",
		},
		{
			name:    "runcmd entry that is a number",
			data:    minimal("", "- 42\n"),
			wantErr: "runcmd[1] is float64, not a shell command",
		},
		{
			name:    "file owned by a user of users, written before users",
			data:    minimal("- path: /home/ops/.profile\n  owner: ops:ops\n", "") + "users:\n- name: ops\n",
			wantErr: "write_files /home/ops/.profile: owner \"ops:ops\": ops is created by users",
		},
		{
			name:    "file owned by a group of users, written before users",
			data:    minimal("- path: /etc/x\n  owner: root:docker\n", "") + "users:\n- name: ops\n  groups: wheel, docker\n",
			wantErr: "docker is created by users",
		},
		{
			name:    "file owned by a primary group of users, written before users",
			data:    minimal("- path: /etc/x\n  owner: nobody:team\n", "") + "groups: [team]\nusers:\n- {name: ops, primary_group: team}\n",
			wantErr: "team is created by users",
		},
		{
			name:    "numeric owner",
			data:    minimal("- path: /opt/x\n  owner: \"1000:1000\"\n  defer: true\n", ""),
			wantErr: `owner "1000:1000": cloud-init looks owners up by name and finds no "1000"`,
		},
		{
			name:    "numeric group",
			data:    minimal("- path: /opt/x\n  owner: \"root:0\"\n", ""),
			wantErr: `finds no "0"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := parseCloudConfig([]byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("parseCloudConfig error = %v (data %+v), want one containing %q\ndata:\n%s", err, b, tc.wantErr, tc.data)
			}
		})
	}
}

// Deferred entries are written after users, and before the runcmd script: they
// may be owned by its accounts, and even k3s's config may be deferred.
func TestParseCloudConfigDeferredFiles(t *testing.T) {
	t.Parallel()
	data := strings.Replace(minimal(
		"- path: /home/ops/.profile\n  owner: ops:docker\n  defer: true\n  content: hi\n"+
			"- path: /opt/image-account\n  owner: nobody:nogroup\n"+
			"- path: /opt/root\n  owner: root\n",
		""), "  permissions: \"0600\"\n", "  permissions: \"0600\"\n  defer: true\n", 1) +
		"users:\n- name: ops\n  groups: [docker]\n- root\n"
	b, err := parseCloudConfig([]byte(data))
	if err != nil {
		t.Fatalf("parseCloudConfig: %v\n%s", err, data)
	}
	if string(b.files["/home/ops/.profile"]) != "hi" || b.k3sConfig["server"] != "https://cp.example.com:6443" {
		t.Errorf("files = %q, k3s config %v", b.files, b.k3sConfig)
	}
}

func TestParseCloudConfigReadsHandWrittenData(t *testing.T) {
	t.Parallel()
	const payload = "line 1\nline 2: with a colon\n"
	data := minimal(
		"- path: /opt/plain\n  content: |\n    line 1\n    line 2: with a colon\n"+
			"- path: /opt/text-plain\n  encoding: text/plain\n  content: hello\n"+
			"- path: /opt/b64\n  encoding: b64\n  content: "+base64.StdEncoding.EncodeToString([]byte(payload))+"\n"+
			"- path: /opt/base64\n  encoding: base64\n  content: AAEC/w==\n"+
			"- path: /opt/gzb64\n  encoding: gz+b64\n  content: "+gzipBase64(t, payload)+"\n"+
			"- path: /opt/gzipbase64\n  encoding: gzip+base64\n  content: "+gzipBase64(t, "\x00\x01binary")+"\n"+
			"- path: /opt/upper\n  encoding: B64\n  content: aGk=\n"+
			"- path: /opt/empty\n  permissions: \"0644\"\n  owner: nobody:nogroup\n  defer: false\n",
		"- echo post\n",
	)
	b, err := parseCloudConfig([]byte(data))
	if err != nil {
		t.Fatalf("parseCloudConfig: %v\n%s", err, data)
	}
	wantFiles := map[string]string{
		k3sConfigPath:     "server: https://cp.example.com:6443\ntoken: s3cr3t\n",
		"/opt/plain":      payload,
		"/opt/text-plain": "hello",
		"/opt/b64":        payload,
		"/opt/base64":     "\x00\x01\x02\xff",
		"/opt/gzb64":      payload,
		"/opt/gzipbase64": "\x00\x01binary",
		"/opt/upper":      "hi",
		"/opt/empty":      "",
	}
	if got, want := slices.Sorted(maps.Keys(b.files)), slices.Sorted(maps.Keys(wantFiles)); !slices.Equal(got, want) {
		t.Fatalf("files = %q, want %q", got, want)
	}
	for p, want := range wantFiles {
		if got := string(b.files[p]); got != want {
			t.Errorf("file %s = %q, want %q", p, got, want)
		}
	}
	wantCmds := []string{
		"curl -sfL 'https://get.k3s.io' | INSTALL_K3S_VERSION='v1.35.4+k3s1' sh -s - agent",
		"echo post",
	}
	if !slices.Equal(b.commands, wantCmds) {
		t.Errorf("commands = %q, want %q", b.commands, wantCmds)
	}
	if want := (installCommand{role: roleAgent, version: testVersion}); b.install != want {
		t.Errorf("install = %+v, want %+v", b.install, want)
	}
	if got := b.str("server"); got != testEndpoint {
		t.Errorf("server = %q, want %q", got, testEndpoint)
	}
	if got := b.str("token"); got != "s3cr3t" {
		t.Errorf("token = %q, want s3cr3t", got)
	}
	if got := b.str("missing"); got != "" {
		t.Errorf(`str("missing") = %q, want ""`, got)
	}
}

func TestParseCloudConfigEmptyK3sConfig(t *testing.T) {
	t.Parallel()
	data := "#cloud-config\nwrite_files:\n- path: /etc/rancher/k3s/config.yaml\n  content: ''\n" +
		"runcmd:\n- INSTALL_K3S_VERSION=v1.35.4+k3s1 sh /opt/install.sh server\n"
	b, err := parseCloudConfig([]byte(data))
	if err != nil {
		t.Fatalf("parseCloudConfig: %v", err)
	}
	if b.k3sConfig == nil || len(b.k3sConfig) != 0 {
		t.Errorf("k3sConfig = %#v, want an empty, non-nil map", b.k3sConfig)
	}
	if want := (installCommand{role: roleServer, version: testVersion, script: "/opt/install.sh"}); b.install != want {
		t.Errorf("install = %+v, want %+v", b.install, want)
	}
}

func TestDecodeContent(t *testing.T) {
	t.Parallel()
	gz := gzipBase64(t, "zipped")
	gzRaw, err := base64.StdEncoding.DecodeString(gz)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		content, encoding string
		want              string
		wantErr           bool
	}{
		{content: "plain", encoding: "", want: "plain"},
		{content: "plain", encoding: "text/plain", want: "plain"},
		{content: "aGk=", encoding: "b64", want: "hi"},
		{content: "aGk=", encoding: "base64", want: "hi"},
		{content: "aGk=", encoding: "Base64", want: "hi"},
		{content: string(gzRaw), encoding: "gz", want: "zipped"},
		{content: string(gzRaw), encoding: "gzip", want: "zipped"},
		{content: gz, encoding: "gz+base64", want: "zipped"},
		{content: gz, encoding: "gzip+base64", want: "zipped"},
		{content: gz, encoding: "gz+b64", want: "zipped"},
		{content: gz, encoding: "gzip+b64", want: "zipped"},
		{content: "aGk=", encoding: "rot13", wantErr: true},
		{content: "not base64!", encoding: "b64", wantErr: true},
		{content: "not base64!", encoding: "gz+b64", wantErr: true},
		{content: "aGk=", encoding: "gz+b64", wantErr: true},
		{content: "not gzip", encoding: "gzip", wantErr: true},
	}
	for _, tc := range tests {
		got, err := decodeContent(tc.content, tc.encoding)
		if tc.wantErr {
			if err == nil {
				t.Errorf("decodeContent(%q, %q) = %q, want an error", tc.content, tc.encoding, got)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("decodeContent(%q, %q) = %q, %v, want %q", tc.content, tc.encoding, got, err, tc.want)
		}
	}
}

// TestParseCloudConfigReadsRenderedData runs the production renderer, with real CAs
// and tokens, and checks that the simulator reads what a machine would act on.
func TestParseCloudConfigReadsRenderedData(t *testing.T) {
	t.Parallel()
	ca := mustCAs(t, theCAs)
	tok := token.Token{Server: "s3rver-pass", Agent: "ag3nt-pass"}
	serverTok, err := tok.ServerJoinToken(ca.serverCA)
	if err != nil {
		t.Fatal(err)
	}
	agentTok, err := tok.AgentJoinToken(ca.serverCA)
	if err != nil {
		t.Fatal(err)
	}
	spec := bootstrapv1.KThreesConfigSpec{
		PreK3sCommands:  []string{"echo pre"},
		PostK3sCommands: []string{"echo post"},
		AgentConfig: bootstrapv1.KThreesAgentConfig{
			NodeLabels: []string{"tier=x"},
			NodeTaints: []string{"dedicated=x:NoSchedule"},
			NodeName:   "node-x",
		},
		ServerConfig: bootstrapv1.KThreesServerConfig{ClusterCidr: "10.42.0.0/16"},
	}
	files := []cloudinit.File{
		{Path: "/etc/motd", Content: "hello\n"},
		{Path: "/opt/blob", Encoding: bootstrapv1.Base64, Content: "AAEC"},
		{Path: "/opt/zipped", Encoding: bootstrapv1.GzipBase64, Content: gzipBase64(t, "unzipped\n")},
		{Path: "/opt/not-yaml-safe", Content: "tab\there\x00"},
	}
	// onDisk is what each of files holds once cloud-init has decoded it.
	onDisk := map[string]string{
		"/etc/motd":          "hello\n",
		"/opt/blob":          "\x00\x01\x02",
		"/opt/zipped":        "unzipped\n",
		"/opt/not-yaml-safe": "tab\there\x00",
	}
	airGapped := spec
	airGapped.AgentConfig.AirGapped = true
	airGapped.AgentConfig.AirGappedInstallScriptPath = "/opt/k3s/install it.sh"

	tests := []struct {
		name        string
		in          cloudinit.Input
		wantInstall installCommand
		wantOptions map[string]any
		wantCAs     bool
	}{
		{
			name: "server-init",
			in: cloudinit.Input{
				Role: cloudinit.ServerInit, Spec: spec, Version: testVersion, Token: serverTok, AgentToken: agentTok,
				TLSSANs: []string{"cp.example.com"}, Certificates: ca.files, Files: files,
			},
			wantInstall: installCommand{role: roleServer, version: testVersion},
			wantOptions: map[string]any{
				"cluster-init": true, "token": serverTok, "agent-token": agentTok, "node-name": "node-x",
				"node-label": []any{"tier=x"}, "node-taint": []any{"dedicated=x:NoSchedule"},
				"kubelet-arg": []any{"cloud-provider=external"}, "tls-san": []any{"cp.example.com"},
				"cluster-cidr": "10.42.0.0/16", "disable-cloud-controller": true,
			},
			wantCAs: true,
		},
		{
			name: "server-join, version without v",
			in: cloudinit.Input{
				Role: cloudinit.ServerJoin, Spec: spec, Version: "1.35.4+k3s1", ServerURL: testEndpoint, Token: serverTok,
				AgentToken: agentTok, TLSSANs: []string{"cp.example.com"}, Certificates: ca.files, Files: files,
			},
			wantInstall: installCommand{role: roleServer, version: testVersion},
			wantOptions: map[string]any{
				"server": testEndpoint, "token": serverTok, "agent-token": agentTok, "node-name": "node-x",
				"node-label": []any{"tier=x"}, "node-taint": []any{"dedicated=x:NoSchedule"},
				"kubelet-arg": []any{"cloud-provider=external"}, "tls-san": []any{"cp.example.com"},
				"cluster-cidr": "10.42.0.0/16", "disable-cloud-controller": true,
			},
			wantCAs: true,
		},
		{
			name: "agent",
			in: cloudinit.Input{
				Role: cloudinit.Agent, Spec: spec, Version: testVersion, ServerURL: testEndpoint, Token: agentTok, Files: files,
			},
			wantInstall: installCommand{role: roleAgent, version: testVersion},
			wantOptions: map[string]any{
				"server": testEndpoint, "token": agentTok, "node-name": "node-x",
				"node-label": []any{"tier=x"}, "node-taint": []any{"dedicated=x:NoSchedule", "node.cluster.x-k8s.io/uninitialized:NoSchedule"},
				"kubelet-arg": []any{"cloud-provider=external"},
			},
		},
		{
			name: "air-gapped agent",
			in: cloudinit.Input{
				Role: cloudinit.Agent, Spec: airGapped, Version: "v1.34.0-rc1+k3s2", ServerURL: testEndpoint, Token: agentTok,
			},
			wantInstall: installCommand{role: roleAgent, version: "v1.34.0-rc1+k3s2", skipDownload: true, script: "/opt/k3s/install it.sh"},
			wantOptions: map[string]any{
				"server": testEndpoint, "token": agentTok, "node-name": "node-x",
				"node-label": []any{"tier=x"}, "node-taint": []any{"dedicated=x:NoSchedule", "node.cluster.x-k8s.io/uninitialized:NoSchedule"},
				"kubelet-arg": []any{"cloud-provider=external"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, _ := parseRendered(t, mustRender(t, tc.in))
			if b.install != tc.wantInstall {
				t.Errorf("install = %+v, want %+v", b.install, tc.wantInstall)
			}
			if !equalJSON(t, b.k3sConfig, tc.wantOptions) {
				t.Errorf("k3s options = %v, want %v", b.k3sConfig, tc.wantOptions)
			}
			// First the product's check that cloud-init applied the files and users.
			if n := len(b.commands); n != 5 || !strings.Contains(b.commands[0], "/etc/rancher/k3s/config.yaml") ||
				b.commands[1] != "echo pre" || b.commands[3] != "echo post" ||
				!strings.Contains(b.commands[4], "/run/cluster-api/bootstrap-success.complete") {
				t.Errorf("commands = %q, want check, pre, install, post, sentinel", b.commands)
			}
			wantFiles := map[string]string{}
			for _, f := range tc.in.Files {
				wantFiles[f.Path] = onDisk[f.Path]
			}
			for _, f := range tc.in.Certificates {
				wantFiles[f.Path] = f.Content
			}
			for p, want := range wantFiles {
				if got, ok := b.files[p]; !ok || string(got) != want {
					t.Errorf("file %s = %q (written: %v), want %q", p, got, ok, want)
				}
			}
			if got, want := len(b.files), len(wantFiles)+1; got != want {
				t.Errorf("%d files written, want %d (the k3s config and %v)", got, want, slices.Sorted(maps.Keys(wantFiles)))
			}
			_, hasCA := b.files[serverCACertPath]
			if hasCA != tc.wantCAs {
				t.Errorf("server CA written = %v, want %v", hasCA, tc.wantCAs)
			}
		})
	}
}

// equalJSON compares two values as their JSON forms, so that YAML's number and list
// types do not matter.
func equalJSON(t testing.TB, a, b any) bool {
	t.Helper()
	ja, err := yaml.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := yaml.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ja, jb)
}

// fullInput renders role with every spec field that becomes a k3s option set.
func fullInput(role cloudinit.Role, ca clusterCAs) cloudinit.Input {
	in := cloudinit.Input{
		Role: role, Version: testVersion, Token: "K10::server:s3rver",
		Spec: bootstrapv1.KThreesConfigSpec{
			AgentConfig: bootstrapv1.KThreesAgentConfig{
				NodeLabels: []string{"a=b"}, NodeTaints: []string{"a=b:NoSchedule"}, PrivateRegistry: "/etc/registries.yaml",
				KubeletArgs: []string{"v=2"}, KubeProxyArgs: []string{"v=2"}, NodeName: "n",
			},
			ServerConfig: bootstrapv1.KThreesServerConfig{
				KubeAPIServerArgs: []string{"v=2"}, KubeControllerManagerArgs: []string{"v=2"}, KubeSchedulerArgs: []string{"v=2"},
				TLSSan: []string{"x.example.com"}, BindAddress: "0.0.0.0", AdvertiseAddress: "10.0.0.1",
				ClusterCidr: "10.42.0.0/16", ServiceCidr: "10.43.0.0/16", ClusterDNS: "10.43.0.10", ClusterDomain: "cluster.local",
				DisableComponents: []string{"traefik"}, SystemDefaultRegistry: "registry.example.com",
				HTTPSListenPort: "6443", AdvertisePort: "6443",
			},
		},
	}
	switch role {
	case cloudinit.ServerInit:
		in.AgentToken, in.Certificates = "K10::node:ag3nt", ca.files
	case cloudinit.ServerJoin:
		in.AgentToken, in.Certificates, in.ServerURL = "K10::node:ag3nt", ca.files, testEndpoint
	case cloudinit.Agent:
		in.Token, in.ServerURL = "K10::node:ag3nt", testEndpoint
	}
	return in
}

// TestParseCloudConfigReadsGoldenFiles reads the renderer's golden outputs: what
// capk3s really writes, with the install lines of every kind. Their CAs are
// placeholders, so only parsing is checked here.
func TestParseCloudConfigReadsGoldenFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file        string
		wantInstall installCommand
		wantOptions map[string]any // a subset of the k3s options
		wantFiles   []string
	}{
		{
			file:        "server-init.yaml",
			wantInstall: installCommand{role: roleServer, version: testVersion},
			wantOptions: map[string]any{"cluster-init": true},
			wantFiles:   []string{serverCACertPath, serverCAKeyPath, clientCACertPath, clientCAKeyPath, k3sConfigPath},
		},
		{
			file:        "server-join.yaml",
			wantInstall: installCommand{role: roleServer, version: testVersion},
			wantOptions: map[string]any{
				"server": testEndpoint, "token": "K10deadbeef::server:s3cr3t", "agent-token": "K10deadbeef::node:ag3nt",
				"node-name": "cp-0", "https-listen-port": float64(6443),
			},
			wantFiles: []string{serverCACertPath, serverCAKeyPath, clientCACertPath, clientCAKeyPath, k3sConfigPath, "/etc/motd", "/opt/data.bin"},
		},
		{
			file:        "agent.yaml",
			wantInstall: installCommand{role: roleAgent, version: testVersion},
			wantOptions: map[string]any{"server": testEndpoint, "token": "K10deadbeef::node:ag3nt"},
			wantFiles:   []string{k3sConfigPath, "/etc/motd"},
		},
		{
			file:        "air-gapped.yaml",
			wantInstall: installCommand{role: roleAgent, version: "v1.34.0-rc1+k3s2", skipDownload: true, script: "/opt/k3s/install it.sh"},
			wantOptions: map[string]any{"server": testEndpoint, "token": "K10deadbeef::node:ag3nt"},
			wantFiles:   []string{k3sConfigPath},
		},
		{
			file:        "registries.yaml",
			wantInstall: installCommand{role: roleServer, version: testVersion},
			wantOptions: map[string]any{"cluster-init": true},
			wantFiles:   []string{k3sConfigPath, "/etc/rancher/k3s/registries.yaml"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("..", "..", "internal", "cloudinit", "testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			b, err := parseCloudConfig(data)
			if err != nil {
				t.Fatalf("parseCloudConfig: %v", err)
			}
			if b.install != tc.wantInstall {
				t.Errorf("install = %+v, want %+v", b.install, tc.wantInstall)
			}
			for k, want := range tc.wantOptions {
				if got := b.k3sConfig[k]; got != want {
					t.Errorf("option %s = %#v, want %#v", k, got, want)
				}
			}
			for _, p := range tc.wantFiles {
				if len(b.files[p]) == 0 {
					t.Errorf("file %s is not written or empty", p)
				}
			}
			for key := range b.k3sConfig {
				if !knownOption(t, b.install.version, b.install.role, key) {
					t.Errorf("option %q is not one k3s %s takes", key, b.install.role)
				}
			}
		})
	}
}
