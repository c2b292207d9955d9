package cloudinit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// TestRenderIgnitionGolden renders the golden inputs as Ignition. The golden
// files hold the config indented, for review; the comparison is on the same
// indentation of the exact output.
func TestRenderIgnitionGolden(t *testing.T) {
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Render(asIgnition(tc.in))
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			var indented bytes.Buffer
			if err := json.Indent(&indented, out, "", "  "); err != nil {
				t.Fatalf("output is not JSON: %v", err)
			}
			indented.WriteByte('\n')
			golden := filepath.Join("testdata", "ignition", tc.name+".json")
			if *update {
				if err := os.WriteFile(golden, indented.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("reading golden file (run with -update to create it): %v", err)
			}
			if indented.String() != string(want) {
				t.Errorf("output differs from %s (run with -update if intended):\n%s", golden, indented.String())
			}

			p := checkSameAsCloudConfig(t, tc.in)
			var paths []string
			for _, f := range p.files {
				paths = append(paths, f.path)
			}
			if !reflect.DeepEqual(paths, tc.wantPaths) {
				t.Errorf("file paths = %q, want %q", paths, tc.wantPaths)
			}
			// The chowns are cloud-config's way to numeric owners; Ignition sets IDs.
			if got, want := p.commands(t), scriptOf(withoutChowns(tc.wantRunCmd)); got != want {
				t.Errorf("script commands = %q\nwant %q", got, want)
			}
		})
	}
}

// TestRenderIgnitionFiles checks modes, owners and encodings on the machine.
func TestRenderIgnitionFiles(t *testing.T) {
	in := asIgnition(goldenCases()[0].in)
	gz := encodedFile(t, "/opt/gz", bootstrapv1.Gzip, []byte("raw gzip\n"))
	gzb64 := encodedFile(t, "/opt/gzb64", bootstrapv1.GzipBase64, []byte("gzip, then base64\n"))
	gz.in.Owner, gzb64.in.Owner = "1000:1001", "core"
	in.Files = append(in.Files, gz.in, gzb64.in)
	out, err := Render(in)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	p := parseIgnition(t, out)
	for _, want := range []ignFile{
		{path: "/var/lib/rancher/k3s/server/tls/server-ca.key", user: "root", group: "root", mode: 0o600, content: []byte(serverCerts()[1].Content)},
		{path: "/var/lib/rancher/k3s/server/tls/client-ca.crt", user: "root", group: "root", mode: 0o644, content: []byte(serverCerts()[2].Content)},
		{path: "/etc/motd", user: "root", group: "root", mode: 0o644, content: []byte("hello {{ ds.meta_data.hostname }}\n")},
		{path: "/opt/data.bin", user: "nobody", group: "nogroup", mode: 0o640, content: []byte{0, 1, 2}},
		{path: "/opt/gz", user: "1000", group: "1001", mode: 0o644, content: []byte("raw gzip\n")},
		{path: "/opt/gzb64", user: "core", mode: 0o644, content: []byte("gzip, then base64\n")},
	} {
		if got := p.file(t, want.path); !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %+v\nwant %+v", want.path, got, want)
		}
	}
	if got := p.file(t, k3sConfigPath); got.mode != 0o600 || !strings.Contains(string(got.content), "token: "+testToken) {
		t.Errorf("config.yaml = mode %o, %q", got.mode, got.content)
	}
	// Numeric owners are IDs, as chown reads them.
	if !bytes.Contains(out, []byte(`"group":{"id":1001},"overwrite":true,"path":"/opt/gz","user":{"id":1000}`)) {
		t.Errorf("owner 1000:1001 is not written as IDs:\n%s", out)
	}
}

func TestRenderIgnitionErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate  func(*Input)
		wantErr string
	}{
		"undecodable base64": {
			func(in *Input) {
				in.Files = []File{{Path: "/opt/x", Encoding: bootstrapv1.Base64, Content: "not base64!"}}
			},
			"file /opt/x: content declared base64 does not decode",
		},
		"file at the script's path": {
			func(in *Input) { in.Files = []File{{Path: "/etc/capk3s//bootstrap.sh", Content: "x"}} },
			`file path "/etc/capk3s//bootstrap.sh" is where capk3s writes its Ignition bootstrap script`,
		},
		"unknown format": {
			func(in *Input) { in.Spec.Format = "butane" },
			`spec.format "butane": want cloud-config or ignition`,
		},
		"plan errors apply too": {
			func(in *Input) { in.Files = []File{{Path: "relative", Content: "x"}} },
			`file path "relative" must be absolute`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			in := asIgnition(minimal(Agent))
			tc.mutate(&in)
			_, err := Render(in)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Render error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestFormatOf(t *testing.T) {
	for spec, want := range map[bootstrapv1.Format]bootstrapv1.Format{
		"": bootstrapv1.CloudConfig, bootstrapv1.CloudConfig: bootstrapv1.CloudConfig, bootstrapv1.Ignition: bootstrapv1.Ignition,
	} {
		if got := FormatOf(bootstrapv1.KThreesConfigSpec{Format: spec}); got != want {
			t.Errorf("FormatOf(%q) = %q, want %q", spec, got, want)
		}
	}
}
