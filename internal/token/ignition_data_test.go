package token

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"strings"
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_4/types"
	"github.com/vincent-petithory/dataurl"
	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
)

// ignFile is one storage.files entry: content as a data URL, base64 or
// percent-encoded, optionally gzip-compressed first.
type ignFile struct {
	path    string
	content string
	base64  bool
	gzip    bool
	// source, when set, is used as it is instead of content.
	source string
}

func ignitionConfig(t *testing.T, version string, files ...ignFile) []byte {
	t.Helper()
	cfg := igntypes.Config{Ignition: igntypes.Ignition{Version: version}}
	for _, f := range files {
		raw := []byte(f.content)
		var compression *string
		if f.gzip {
			var buf bytes.Buffer
			w := gzip.NewWriter(&buf)
			if _, err := w.Write(raw); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			raw, compression = buf.Bytes(), ptr.To("gzip")
		}
		du := dataurl.New(raw, "text/plain")
		if !f.base64 {
			du.Encoding = dataurl.EncodingASCII
		}
		source := du.String()
		if f.source != "" {
			source = f.source
		}
		cfg.Storage.Files = append(cfg.Storage.Files, igntypes.File{
			Node: igntypes.Node{Path: f.path, Overwrite: ptr.To(true)},
			FileEmbedded1: igntypes.FileEmbedded1{
				Mode:     ptr.To(0o600),
				Contents: igntypes.Resource{Source: ptr.To(source), Compression: compression},
			},
		})
	}
	out, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTokenFromIgnitionData(t *testing.T) {
	secureServer := "K10" + testCAHash + "::server:srv-pass"
	secureAgent := "K10" + testCAHash + "::node:agt-pass"
	k3sConfig := "cluster-init: true\ntoken: " + secureServer + "\nagent-token: " + secureAgent + "\n"
	tests := []struct {
		name      string
		data      []byte
		format    string
		want      Token
		wantFound bool
		wantErr   bool
	}{
		{
			name:      "percent-encoded data URL",
			data:      ignitionConfig(t, "3.4.0", ignFile{path: "/etc/motd", content: "hi"}, ignFile{path: k3sConfigPath, content: k3sConfig}),
			format:    "ignition",
			want:      Token{Server: "srv-pass", Agent: "agt-pass"},
			wantFound: true,
		},
		{
			name:      "base64 data URL",
			data:      ignitionConfig(t, "3.4.0", ignFile{path: k3sConfigPath, content: k3sConfig, base64: true}),
			format:    "ignition",
			want:      Token{Server: "srv-pass", Agent: "agt-pass"},
			wantFound: true,
		},
		{
			name:      "gzip-compressed, base64 data URL",
			data:      ignitionConfig(t, "3.4.0", ignFile{path: k3sConfigPath, content: k3sConfig, base64: true, gzip: true}),
			format:    "ignition",
			want:      Token{Server: "srv-pass", Agent: "agt-pass"},
			wantFound: true,
		},
		{
			name:      "an older spec (3.0), format found by sniffing",
			data:      ignitionConfig(t, "3.0.0", ignFile{path: k3sConfigPath, content: "token: bare-srv\n"}),
			want:      Token{Server: "bare-srv"},
			wantFound: true,
		},
		{
			name: "drop-ins override config.yaml in file-name order, whatever the entry order",
			data: ignitionConfig(t, "3.4.0",
				ignFile{path: k3sConfigDropIn + "90-late.yml", content: "token: K10::server:late\n"},
				ignFile{path: k3sConfigPath, content: "token: K10::server:from-config\nagent-token: K10::node:agent-from-config\n"},
				ignFile{path: k3sConfigDropIn + "10-early.yaml", content: "token: early\n", base64: true},
			),
			format:    "ignition",
			want:      Token{Server: "late", Agent: "agent-from-config"},
			wantFound: true,
		},
		{
			name: "files k3s does not read are ignored, even when unreadable",
			data: ignitionConfig(t, "3.4.0",
				ignFile{path: k3sConfigPath, content: "token: real\n"},
				ignFile{path: k3sConfigDropIn + "99-notes.txt", content: "token: not-read\n"},
				ignFile{path: k3sConfigDropIn + "sub/99-nested.yaml", content: "token: not-read\n"},
				ignFile{path: "/opt/fetched", source: "https://example.com/blob"},
			),
			format:    "ignition",
			want:      Token{Server: "real"},
			wantFound: true,
		},
		{
			name:   "no k3s config file",
			data:   ignitionConfig(t, "3.4.0", ignFile{path: "/etc/motd", content: "token: not-k3s\n"}),
			format: "ignition",
		},
		{
			name:   "agent-token only is not a token",
			data:   ignitionConfig(t, "3.4.0", ignFile{path: k3sConfigPath, content: "agent-token: agt\n"}),
			format: "ignition",
			want:   Token{Agent: "agt"},
		},
		{
			name:    "k3s config fetched from elsewhere",
			data:    ignitionConfig(t, "3.4.0", ignFile{path: k3sConfigPath, source: "https://example.com/config.yaml"}),
			format:  "ignition",
			wantErr: true,
		},
		{
			name:    "gzip declared but not gzip",
			data:    []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/rancher/k3s/config.yaml","contents":{"source":"data:,token%3A%20x","compression":"gzip"}}]}}`),
			format:  "ignition",
			wantErr: true,
		},
		{
			name:    "not JSON although declared Ignition",
			data:    []byte("#cloud-config\nwrite_files: []\n"),
			format:  "ignition",
			wantErr: true,
		},
		{
			name:    "JSON that is not an Ignition config",
			data:    []byte(`{"write_files": []}`),
			format:  "ignition",
			wantErr: true,
		},
		{
			name:    "unknown format",
			data:    ignitionConfig(t, "3.4.0", ignFile{path: k3sConfigPath, content: "token: x\n"}),
			format:  "shell-script",
			wantErr: true,
		},
		{
			name:      "cloud-config declared as such",
			data:      cloudConfig(writeFile(k3sConfigPath, "", "token: from-cloud-config\n")),
			format:    "cloud-config",
			want:      Token{Server: "from-cloud-config"},
			wantFound: true,
		},
		{
			name:      "cloud-config without a format key",
			data:      cloudConfig(writeFile(k3sConfigPath, "", "token: from-cloud-config\n")),
			want:      Token{Server: "from-cloud-config"},
			wantFound: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, found, err := tokenFromBootstrapData(tc.data, tc.format)
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
			if got.Server != tc.want.Server || got.Agent != tc.want.Agent {
				t.Errorf("token = {Server:%q Agent:%q}, want {Server:%q Agent:%q}", got.Server, got.Agent, tc.want.Server, tc.want.Agent)
			}
		})
	}
}

// What the product's own renderer writes for a server, in both formats, gives the
// token back: recovery and rendering cannot drift apart.
func TestTokenFromRenderedServerData(t *testing.T) {
	secureServer := "K10" + testCAHash + "::server:rendered-srv"
	secureAgent := "K10" + testCAHash + "::node:rendered-agt"
	for _, format := range []bootstrapv1.Format{bootstrapv1.CloudConfig, bootstrapv1.Ignition} {
		for _, role := range []cloudinit.Role{cloudinit.ServerInit, cloudinit.ServerJoin} {
			t.Run(string(format)+"/"+string(role), func(t *testing.T) {
				in := cloudinit.Input{
					Role:       role,
					Spec:       bootstrapv1.KThreesConfigSpec{Format: format},
					Version:    "v1.31.4+k3s1",
					Token:      secureServer,
					AgentToken: secureAgent,
				}
				if role == cloudinit.ServerJoin {
					in.ServerURL = "https://10.0.0.1:6443"
				}
				data, err := cloudinit.Render(in)
				if err != nil {
					t.Fatalf("Render: %v", err)
				}
				if format == bootstrapv1.Ignition && !strings.HasPrefix(string(data), "{") {
					t.Fatalf("the renderer did not write Ignition JSON: %.40q", data)
				}
				got, found, err := tokenFromBootstrapData(data, string(cloudinit.FormatOf(in.Spec)))
				if err != nil || !found {
					t.Fatalf("tokenFromBootstrapData: found %v, err %v", found, err)
				}
				if got.Server != "rendered-srv" || got.Agent != "rendered-agt" {
					t.Errorf("token = {Server:%q Agent:%q}, want rendered-srv/rendered-agt", got.Server, got.Agent)
				}
			})
		}
	}
}
