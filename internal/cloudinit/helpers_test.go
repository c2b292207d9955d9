package cloudinit

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// parsed is the cloud-config read back the way a consumer would.
type parsed struct {
	ccOSSetup
	WriteFiles []writeFile `json:"write_files"`
	RunCmd     []string    `json:"runcmd"`
	// Check is the runcmd entry that checks files and users (cloudconfig_check.go);
	// parse takes it out of RunCmd, so that RunCmd is the chowns and the plan's commands.
	Check string `json:"-"`
	// Chmods are the runcmd lines that set setuid/setgid bits again, between the
	// chowns and the check; parse takes them out of RunCmd too.
	Chmods []string `json:"-"`
}

var chmodCommand = regexp.MustCompile(`^chmod '[0-7]+' '((?:[^']|'\\'')*)' \|\| exit 1$`)

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
	p.takeCheck(t)
	return p
}

// takeCheck removes the check entry from runcmd: there must be exactly one, and
// it must come after every chown and before any other command.
func (p *parsed) takeCheck(t testing.TB) {
	t.Helper()
	at := -1
	for i, c := range p.RunCmd {
		if strings.HasPrefix(c, checkHeader+"\n") {
			if at >= 0 {
				t.Fatalf("runcmd has two checks, [%d] and [%d]", at, i)
			}
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("runcmd has no check of files and users: %q", p.RunCmd)
	}
	chmods := 0
	for i, c := range p.RunCmd {
		chmod := chmodCommand.MatchString(c)
		if chown := chownCommand.MatchString(c); (chown || chmod) != (i < at) || chown && chmods > 0 {
			t.Fatalf("runcmd[%d] = %q: the check (runcmd[%d]) must follow the chowns, then chmods, and come before anything else", i, c, at)
		}
		if chmod {
			chmods++
		}
	}
	p.Chmods = slices.Clone(p.RunCmd[at-chmods : at])
	p.Check = p.RunCmd[at]
	p.RunCmd = append(p.RunCmd[:at-chmods:at-chmods], p.RunCmd[at+1:]...)
}

// chownCommand is the runcmd line that gives a file its numeric owner: two
// single-quoted sh words, the owner and the path.
var chownCommand = regexp.MustCompile(`^chown '((?:[^']|'\\'')*)' '((?:[^']|'\\'')*)' \|\| exit 1$`)

func unquoteSh(s string) string { return strings.ReplaceAll(s, `'\''`, "'") }

// applyChowns plays the chowns at the head of runcmd, as the machine would before
// any other command: each sets the owner of its file (which cloud-init wrote as
// root:root, not deferred), and runcmd is left with the plan's commands.
func (p *parsed) applyChowns(t testing.TB) {
	t.Helper()
	for len(p.RunCmd) > 0 {
		m := chownCommand.FindStringSubmatch(p.RunCmd[0])
		if m == nil {
			return
		}
		owner, path := unquoteSh(m[1]), unquoteSh(m[2])
		found := false
		for i := range p.WriteFiles {
			w := &p.WriteFiles[i]
			if w.Path != path {
				continue
			}
			if w.Owner != defaultOwner || w.Defer {
				t.Errorf("%s is chowned to %s but written as %s (defer %v), not root:root at once", path, owner, w.Owner, w.Defer)
			}
			w.Owner, found = owner, true
		}
		if !found {
			t.Errorf("runcmd chowns %s, which write_files does not write", path)
		}
		p.RunCmd = p.RunCmd[1:]
	}
}

// withoutChowns is cmds without cloud-config's chowns.
func withoutChowns(cmds []string) []string {
	var out []string
	for _, c := range cmds {
		if !chownCommand.MatchString(c) {
			out = append(out, c)
		}
	}
	return out
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
