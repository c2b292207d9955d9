package token

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"strings"
	"testing"
)

const testCAHash = "4f1b8c1e8e2a3b5d6c7e9f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e"

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func gzB64(t *testing.T, s string) string {
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

// writeFile renders one write_files entry; content is indented as a YAML block.
func writeFile(path, encoding, content string) string {
	var b strings.Builder
	b.WriteString("- path: " + path + "\n")
	b.WriteString("  owner: root:root\n  permissions: '0600'\n")
	if encoding != "" {
		b.WriteString("  encoding: " + encoding + "\n")
	}
	b.WriteString("  content: |\n")
	for _, line := range strings.Split(strings.TrimRight(content, "\n"), "\n") {
		b.WriteString("    " + line + "\n")
	}
	return b.String()
}

func cloudConfig(files ...string) []byte {
	return []byte("## template: jinja\n#cloud-config\nwrite_files:\n" + strings.Join(files, "") +
		"runcmd:\n- 'curl -sfL https://get.k3s.io | sh -s - server'\n")
}

func TestTokenFromBootstrapData(t *testing.T) {
	secureServer := "K10" + testCAHash + "::server:srv-pass"
	secureAgent := "K10" + testCAHash + "::node:agt-pass"
	k3sConfig := "cluster-init: true\ntoken: " + secureServer + "\nagent-token: " + secureAgent + "\ntls-san:\n- 10.0.0.1\n"
	serverOnly := "token: " + secureServer + "\n"
	tests := []struct {
		name      string
		data      []byte
		want      Token
		wantFound bool
		wantErr   bool
	}{
		{
			name:      "plain config.yaml, secure form, with agent-token",
			data:      cloudConfig(writeFile("/etc/k3s-ca.crt", "", "-----BEGIN CERTIFICATE-----"), writeFile(k3sConfigPath, "", k3sConfig)),
			want:      Token{Server: "srv-pass", Agent: "agt-pass"},
			wantFound: true,
		},
		{
			name:      "plain config.yaml, secure form, no agent-token",
			data:      cloudConfig(writeFile(k3sConfigPath, "", serverOnly)),
			want:      Token{Server: "srv-pass"},
			wantFound: true,
		},
		{
			name:      "bare passphrases (cluster-api-k3s)",
			data:      cloudConfig(writeFile(k3sConfigPath, "", "token: bare-srv\nagent-token: bare-agt\n")),
			want:      Token{Server: "bare-srv", Agent: "bare-agt"},
			wantFound: true,
		},
		{
			name:      "quoted values",
			data:      cloudConfig(writeFile(k3sConfigPath, "", "token: \"K10::server:q-srv\"\n")),
			want:      Token{Server: "q-srv"},
			wantFound: true,
		},
		{
			name:      "b64",
			data:      cloudConfig(writeFile(k3sConfigPath, "b64", b64(k3sConfig))),
			want:      Token{Server: "srv-pass", Agent: "agt-pass"},
			wantFound: true,
		},
		{
			name:      "base64",
			data:      cloudConfig(writeFile(k3sConfigPath, "base64", b64(serverOnly))),
			want:      Token{Server: "srv-pass"},
			wantFound: true,
		},
		{
			name:      "gzip+base64",
			data:      cloudConfig(writeFile(k3sConfigPath, "gzip+base64", gzB64(t, k3sConfig))),
			want:      Token{Server: "srv-pass", Agent: "agt-pass"},
			wantFound: true,
		},
		{
			name:      "gz+b64",
			data:      cloudConfig(writeFile(k3sConfigPath, "gz+b64", gzB64(t, serverOnly))),
			want:      Token{Server: "srv-pass"},
			wantFound: true,
		},
		{
			name:      "drop-in only",
			data:      cloudConfig(writeFile(k3sConfigPath, "", "write-kubeconfig-mode: \"0644\"\n"), writeFile(k3sConfigDropIn+"10-token.yaml", "", k3sConfig)),
			want:      Token{Server: "srv-pass", Agent: "agt-pass"},
			wantFound: true,
		},
		{
			name: "drop-in overrides config.yaml whatever the write_files order",
			data: cloudConfig(
				writeFile(k3sConfigDropIn+"50-token.yml", "", "token: K10::server:from-drop-in\n"),
				writeFile(k3sConfigPath, "", "token: K10::server:from-config\nagent-token: K10::node:agent-from-config\n"),
			),
			want:      Token{Server: "from-drop-in", Agent: "agent-from-config"},
			wantFound: true,
		},
		{
			name: "drop-ins apply in file-name order",
			data: cloudConfig(
				writeFile(k3sConfigDropIn+"90-late.yaml", "", "token: late\n"),
				writeFile(k3sConfigDropIn+"10-early.yaml", "", "token: early\n"),
			),
			want:      Token{Server: "late"},
			wantFound: true,
		},
		{
			name: "files k3s does not read are ignored",
			data: cloudConfig(
				writeFile(k3sConfigPath, "", "token: real\n"),
				writeFile(k3sConfigDropIn+"99-notes.txt", "", "token: not-read\n"),
				writeFile(k3sConfigDropIn+"sub/99-nested.yaml", "", "token: not-read\n"),
				writeFile("/etc/rancher/k3s/config.yaml.bak", "", "token: not-read\n"),
			),
			want:      Token{Server: "real"},
			wantFound: true,
		},
		{
			name: "the last write of a path wins",
			data: cloudConfig(
				writeFile(k3sConfigPath, "", "token: first\nagent-token: first-agent\n"),
				writeFile(k3sConfigPath, "", "token: second\n"),
			),
			want:      Token{Server: "second"},
			wantFound: true,
		},
		{
			name:      "k3s config without a token",
			data:      cloudConfig(writeFile(k3sConfigPath, "", "cluster-init: true\n")),
			wantFound: false,
		},
		{
			name:      "agent-token only is not a token",
			data:      cloudConfig(writeFile(k3sConfigPath, "", "agent-token: agt\n")),
			want:      Token{Agent: "agt"},
			wantFound: false,
		},
		{
			name:      "no k3s config file",
			data:      cloudConfig(writeFile("/etc/motd", "", "token: not-k3s\n")),
			wantFound: false,
		},
		{
			name:      "no write_files",
			data:      []byte("#cloud-config\nruncmd:\n- echo hi\n"),
			wantFound: false,
		},
		{
			name:      "empty data",
			data:      nil,
			wantFound: false,
		},
		{
			name:    "not YAML",
			data:    []byte("write_files: [\n  {path: \"unterminated"),
			wantErr: true,
		},
		{
			name:    "a shell script",
			data:    []byte("#!/bin/sh\ncurl -sfL https://get.k3s.io | sh -\n"),
			wantErr: true,
		},
		{
			name:    "k3s config is not YAML",
			data:    cloudConfig(writeFile(k3sConfigPath, "", "token: [unterminated\n")),
			wantErr: true,
		},
		{
			name:    "bad base64",
			data:    cloudConfig(writeFile(k3sConfigPath, "b64", "!!!not base64!!!")),
			wantErr: true,
		},
		{
			name:    "gzip+base64 that is not gzip",
			data:    cloudConfig(writeFile(k3sConfigPath, "gzip+base64", b64("token: plain\n"))),
			wantErr: true,
		},
		{
			name:    "unknown encoding",
			data:    cloudConfig(writeFile(k3sConfigPath, "rot13", "gbxra: k\n")),
			wantErr: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, found, err := tokenFromBootstrapData(tc.data, "cloud-config")
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error; got found=%v", found)
				}
				if found {
					t.Error("found=true along with an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if found != tc.wantFound {
				t.Errorf("found = %v, want %v", found, tc.wantFound)
			}
			// Token's String hides the values, so compare the fields.
			if got.Server != tc.want.Server || got.Agent != tc.want.Agent {
				t.Errorf("token = {Server:%q Agent:%q}, want {Server:%q Agent:%q}", got.Server, got.Agent, tc.want.Server, tc.want.Agent)
			}
		})
	}
}

// An error message about unreadable bootstrap data must not echo the data, which
// holds the token.
func TestTokenFromBootstrapDataErrorsDoNotShowTheToken(t *testing.T) {
	for name, data := range map[string][]byte{
		"k3s config not YAML": cloudConfig(writeFile(k3sConfigPath, "", "token: secret-pass\nfoo: [unterminated\n")),
		"unknown encoding":    cloudConfig(writeFile(k3sConfigPath, "rot13", "token: secret-pass\n")),
	} {
		_, _, err := tokenFromBootstrapData(data, "cloud-config")
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if strings.Contains(err.Error(), "secret-pass") {
			t.Errorf("%s: error %q shows the token", name, err)
		}
	}
}
