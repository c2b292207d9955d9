package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const controlPlaneManifest = `apiVersion: controlplane.cluster.x-k8s.io/v1beta2
kind: KThreesControlPlane
metadata:
  name: cp
spec:
  version: v1.35.4+k3s1
  machineTemplate:
    spec:
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerMachineTemplate, name: cp}
  kthreesConfigSpec:
    serverConfig:
      disableComponents: [traefik]
    files:
    - path: /etc/motd
      content: "hello {{ ds.meta_data.hostname }}"
    - path: /etc/secret.conf
      contentFrom: {secret: {name: app, key: conf}}
`

const workerManifest = `apiVersion: bootstrap.cluster.x-k8s.io/v1beta2
kind: KThreesConfigTemplate
metadata:
  name: workers
spec:
  template:
    spec:
      agentConfig:
        nodeLabels: [pool=a]
`

type rendered struct {
	WriteFiles []struct {
		Path        string `json:"path"`
		Content     string `json:"content"`
		Permissions string `json:"permissions"`
	} `json:"write_files"`
	RunCmd []string `json:"runcmd"`
}

func renderArgs(t *testing.T, manifest string, args ...string) (string, string, int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"render", "-f", path}, args...), strings.NewReader(""), &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

func k3sConfigOf(t *testing.T, out string) map[string]any {
	t.Helper()
	var r rendered
	if err := yaml.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("output is not YAML: %v\n%s", err, out)
	}
	for _, f := range r.WriteFiles {
		if f.Path == "/etc/rancher/k3s/config.yaml" {
			cfg := map[string]any{}
			if err := yaml.Unmarshal([]byte(f.Content), &cfg); err != nil {
				t.Fatal(err)
			}
			return cfg
		}
	}
	t.Fatalf("no k3s config in output:\n%s", out)
	return nil
}

func TestRenderControlPlaneDefaultsToFirstServer(t *testing.T) {
	out, stderr, code := renderArgs(t, controlPlaneManifest)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.HasPrefix(out, "#cloud-config\n") {
		t.Errorf("output does not start with #cloud-config")
	}
	cfg := k3sConfigOf(t, out)
	if cfg["cluster-init"] != true || !strings.Contains(cfg["token"].(string), "::server:"+placeholderServerPassphrase) {
		t.Errorf("config = %v, want cluster-init and the placeholder server token", cfg)
	}
	for _, want := range []string{"{{ ds.meta_data.hostname }}", "PLACEHOLDER: content of Secret app, key conf", "INSTALL_K3S_VERSION='v1.35.4+k3s1'"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The offline rendering shows the permissions the controller gives: a file from a
	// Secret is the owner's alone.
	var r rendered
	if err := yaml.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	for _, f := range r.WriteFiles {
		if want := map[string]string{"/etc/secret.conf": "0600", "/etc/motd": "0644"}[f.Path]; want != "" && f.Permissions != want {
			t.Errorf("%s permissions %q, want %q", f.Path, f.Permissions, want)
		}
	}
}

func TestRenderAgentJoinsTheEndpointWithTheAgentToken(t *testing.T) {
	out, stderr, code := renderArgs(t, workerManifest, "--version", "1.31.4+k3s1", "--endpoint", "10.0.0.1:6443")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	cfg := k3sConfigOf(t, out)
	if cfg["server"] != "https://10.0.0.1:6443" || !strings.Contains(cfg["token"].(string), "::node:"+placeholderAgentPassphrase) {
		t.Errorf("agent config = %v", cfg)
	}
	if strings.Contains(out, placeholderServerPassphrase) || strings.Contains(out, "PLACEHOLDER-----") {
		t.Error("agent output carries the server token or CA material")
	}
}

func TestRenderIgnition(t *testing.T) {
	out, stderr, code := renderArgs(t, workerManifest, "--version", "1.31.4+k3s1", "--format", "ignition")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var cfg struct {
		Ignition struct{ Version string }
		Systemd  struct{ Units []struct{ Name string } }
	}
	if err := json.Unmarshal([]byte(out), &cfg); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if cfg.Ignition.Version != "3.4.0" || len(cfg.Systemd.Units) != 1 || cfg.Systemd.Units[0].Name != "capk3s-bootstrap.service" {
		t.Errorf("Ignition output = %+v", cfg)
	}
}

func TestRenderRejectsBadInput(t *testing.T) {
	cases := []struct {
		name, manifest string
		args           []string
		wantCode       int
		wantErr        string
	}{
		{"no version anywhere", workerManifest, nil, 1, "pass --version"},
		{"bad role", controlPlaneManifest, []string{"--role", "master"}, 1, `--role "master"`},
		{"bad endpoint", controlPlaneManifest, []string{"--endpoint", "nohost"}, 1, "--endpoint"},
		{"unknown kind", "kind: Machine\n", nil, 1, `kind "Machine"`},
		{"bad format", controlPlaneManifest, []string{"--format", "butane"}, 1, `--format "butane"`},
		{"unknown field", strings.Replace(workerManifest, "nodeLabels", "nodeLabelz", 1), []string{"--version", "v1.31.4"}, 1, "nodeLabelz"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := renderArgs(t, tc.manifest, tc.args...)
			if code != tc.wantCode || !strings.Contains(stderr, tc.wantErr) || out != "" {
				t.Errorf("exit %d, stderr %q, stdout %d bytes; want exit %d, error mentioning %q, no output", code, stderr, len(out), tc.wantCode, tc.wantErr)
			}
		})
	}
	var stderr bytes.Buffer
	if code := run([]string{"render"}, strings.NewReader(""), &bytes.Buffer{}, &stderr); code != 2 {
		t.Errorf("render without -f: exit %d, want 2", code)
	}
}

const etcdSnapshotsManifest = `apiVersion: controlplane.cluster.x-k8s.io/v1beta2
kind: KThreesControlPlane
metadata:
  name: cp
spec:
  version: v1.35.4+k3s1
  machineTemplate:
    spec:
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerMachineTemplate, name: cp}
  kthreesConfigSpec:
    serverConfig:
      etcd:
        restoreFrom: etcd-snapshot-cp-0-1700000000
        snapshots:
          schedule: "0 */6 * * *"
          s3:
            bucket: backups
            endpointCASecret: {name: s3-ca, key: ca.crt}
            credentialsSecret: {name: s3-creds}
`

// TestRenderEtcdSnapshots: offline, the S3 Secrets are placeholders in the
// environment file and the CA file, and the restore shows on the first server only.
func TestRenderEtcdSnapshots(t *testing.T) {
	for _, role := range []string{"server-init", "server-join"} {
		out, stderr, code := renderArgs(t, etcdSnapshotsManifest, "--role", role)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", role, code, stderr)
		}
		cfg := k3sConfigOf(t, out)
		if cfg["etcd-s3"] != true || cfg["etcd-snapshot-schedule-cron"] != "0 */6 * * *" {
			t.Errorf("%s: config = %v", role, cfg)
		}
		var r rendered
		if err := yaml.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		env := ""
		for _, f := range r.WriteFiles {
			if f.Path == "/etc/default/k3s" {
				env = f.Content
			}
		}
		if !strings.Contains(env, "AWS_SECRET_ACCESS_KEY='PLACEHOLDER-etcd-s3-secret-key-of-Secret-s3-creds'") {
			t.Errorf("%s: environment file = %q", role, env)
		}
		restores := strings.Contains(strings.Join(r.RunCmd, "\n"), "--cluster-reset-restore-path='etcd-snapshot-cp-0-1700000000'")
		if restores != (role == "server-init") {
			t.Errorf("%s: restores = %v", role, restores)
		}
	}
}
