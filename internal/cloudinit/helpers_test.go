package cloudinit

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"io"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// parsed is the cloud-config read back the way a consumer would.
type parsed struct {
	ccOSSetup
	WriteFiles []writeFile `json:"write_files"`
	RunCmd     []string    `json:"runcmd"`
}

// parse checks the header and reads the document back with sigs.k8s.io/yaml.
func parse(t testing.TB, out []byte) parsed {
	t.Helper()
	first, _, _ := strings.Cut(string(out), "\n")
	if first != "#cloud-config" {
		t.Fatalf("first line = %q, want #cloud-config", first)
	}
	if bytes.Contains(out, []byte("## template: jinja")) {
		t.Fatalf("output has a jinja header:\n%s", out)
	}
	var p parsed
	if err := yaml.UnmarshalStrict(out, &p); err != nil {
		t.Fatalf("output is not a cloud-config: %v\n%s", err, out)
	}
	return p
}

func (p parsed) file(t testing.TB, path string) writeFile {
	t.Helper()
	for _, f := range p.WriteFiles {
		if f.Path == path {
			return f
		}
	}
	t.Fatalf("no write_files entry for %s", path)
	return writeFile{}
}

// bytesOnDisk undoes the write_files encoding, as cloud-init does.
func bytesOnDisk(t testing.TB, f writeFile) []byte {
	t.Helper()
	switch f.Encoding {
	case "":
		return []byte(f.Content)
	case "b64":
		return mustB64(t, f.Content)
	case "gz+b64":
		return mustGunzip(t, mustB64(t, f.Content))
	default:
		t.Fatalf("%s: unexpected encoding %q", f.Path, f.Encoding)
		return nil
	}
}

func mustB64(t testing.TB, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("bad base64: %v", err)
	}
	return b
}

func mustGunzip(t testing.TB, b []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("bad gzip: %v", err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("bad gzip: %v", err)
	}
	return out
}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// k3sConfig returns config.yaml parsed as generic YAML (numbers as float64, lists
// as []any), the way k3s would see keys and values.
func (p parsed) k3sConfig(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(bytesOnDisk(t, p.file(t, k3sConfigPath)), &m); err != nil {
		t.Fatalf("config.yaml: %v", err)
	}
	return m
}

func anyList(s ...string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
