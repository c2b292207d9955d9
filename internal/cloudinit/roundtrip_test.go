package cloudinit

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
)

// fileCase is a file handed to Render together with the bytes that must end up on
// disk, so the check can go past the encodings.
type fileCase struct {
	in      File
	payload []byte
}

// encodedFile encodes payload as enc declares, as a user (or the caller, for
// Secret contents) would.
func encodedFile(t testing.TB, p string, enc bootstrapv1.Encoding, payload []byte) fileCase {
	f := File{Path: p, Encoding: enc}
	switch enc {
	case "":
		f.Content = string(payload)
	case bootstrapv1.Base64:
		f.Content = base64.StdEncoding.EncodeToString(payload)
	case bootstrapv1.Gzip:
		f.Content = string(gzipBytes(t, payload))
	case bootstrapv1.GzipBase64:
		f.Content = base64.StdEncoding.EncodeToString(gzipBytes(t, payload))
	}
	return fileCase{in: f, payload: payload}
}

var encodings = []bootstrapv1.Encoding{"", bootstrapv1.Base64, bootstrapv1.Gzip, bootstrapv1.GzipBase64}

// checkRoundTrip reads out back and checks that every file and command arrived
// unchanged and in order.
func checkRoundTrip(t testing.TB, in Input, files []fileCase, out []byte) {
	t.Helper()
	p := parse(t, out)
	p.applyChowns(t)
	users := map[string]bool{}
	for _, u := range in.Spec.Users {
		users[u.Name] = true
	}
	if want := len(in.Certificates) + 1 + len(files); len(p.WriteFiles) != want {
		t.Fatalf("%d write_files entries, want %d", len(p.WriteFiles), want)
	}
	for i, c := range in.Certificates {
		got := p.WriteFiles[i]
		if got.Path != c.Path || !bytes.Equal(bytesOnDisk(t, got), []byte(c.Content)) {
			t.Errorf("certificate %d = %+v, want %s with %q", i, got, c.Path, c.Content)
		}
		if strings.HasSuffix(c.Path, ".key") && got.Permissions != "0600" {
			t.Errorf("%s permissions = %q, want 0600", c.Path, got.Permissions)
		}
	}
	if cfg := p.WriteFiles[len(in.Certificates)]; cfg.Path != k3sConfigPath || cfg.Permissions != "0600" {
		t.Errorf("entry after the certificates = %+v, want config.yaml 0600", cfg)
	}
	if got := p.k3sConfig(t)["token"]; got != in.Token {
		t.Errorf("config.yaml token = %v, want %q", got, in.Token)
	}
	for i, fc := range files {
		got := p.WriteFiles[len(in.Certificates)+1+i]
		want := fc.in
		if got.Path != want.Path {
			t.Errorf("file %d path = %q, want %q", i, got.Path, want.Path)
			continue
		}
		if want.Owner != "" && got.Owner != want.Owner {
			t.Errorf("%q owner = %q, want %q", got.Path, got.Owner, want.Owner)
		}
		// Written once spec.users exist, exactly when it belongs to one of them
		// (by name; IDs were chowned above).
		u, g := ownerParts(want.Owner)
		if wantDefer := !numericID(u) && !numericID(g) && (users[u] || users[g]); got.Defer != wantDefer {
			t.Errorf("%q (owner %q) defer = %v, want %v", got.Path, want.Owner, got.Defer, wantDefer)
		}
		switch want.Encoding {
		case "":
			if got.Encoding != "" && got.Encoding != "b64" {
				t.Errorf("%q: plain content came out as %q", got.Path, got.Encoding)
			}
		case bootstrapv1.Base64, bootstrapv1.GzipBase64:
			sameText := got.Content == want.Content || (misreadByYAML11(want.Content) && got.Content == want.Content+"\n")
			if !sameText || got.Encoding != map[bootstrapv1.Encoding]string{bootstrapv1.Base64: "b64", bootstrapv1.GzipBase64: "gz+b64"}[want.Encoding] {
				t.Errorf("%q: declared %s content changed: %+v", got.Path, want.Encoding, got)
			}
		case bootstrapv1.Gzip:
			if got.Encoding != "gz+b64" || !bytes.Equal(mustB64(t, got.Content), []byte(want.Content)) {
				t.Errorf("%q: gzip bytes changed: %+v", got.Path, got)
			}
		}
		if disk := bytesOnDisk(t, got); !bytes.Equal(disk, fc.payload) {
			t.Errorf("%q: on disk %q, want %q", got.Path, disk, fc.payload)
		}
		if want.Encoding == "" && got.Encoding == "" && got.Content != want.Content {
			t.Errorf("%q: content %q, want %q", got.Path, got.Content, want.Content)
		}
	}
	version, _ := k3s.InstallVersion(in.Version)
	install, _, _ := installCommands(in, version)
	wantCmds := append(append(append(append([]string{}, in.Spec.PreK3sCommands...), install), in.Spec.PostK3sCommands...), sentinelCommand(in.Role))
	if !reflect.DeepEqual(p.RunCmd, wantCmds) {
		t.Errorf("runcmd = %q\nwant %q", p.RunCmd, wantCmds)
	}
}

// nastyPieces are the strings most likely to confuse YAML, cloud-init or sh.
var nastyPieces = []string{
	"\n", "\n\n", "'", `"`, "#", "# comment", " #", "---", "...", "{{", "}}",
	"{{ ds.meta_data.hostname }}", "{% if %}", "ünïcödé", "日本語", "🙂", "\t", " ", "  ",
	": ", "- ", "|", "|-", ">", "\\", "%", "@", "`", "*", "&a", "!tag", "? ", "[", "]",
	"{", "}", ",", "yes", "no", "on", "~", "null", "0644", "1e3", "0x1F", "\r", "\r\n",
	"\u2028", "\u0085", "\ufeff", "\x01", "\x1b[0m", "\x7f", "$(id)", "$HOME", "\\n",
	strings.Repeat("long ", 40), " trailing ", "\U0010FFFD", "\uFFFE",
	// Alone, these are typed scalars to YAML 1.1 (see misreadByYAML11).
	"=", "<<", "0x1F85939849055613594", "0b" + strings.Repeat("1", 70), "2001-12-14 21:59:43.10 -5", "true", "1:20", ".5",
}

func randText(r *rand.Rand, binary bool) string {
	var b strings.Builder
	for range r.IntN(12) {
		switch n := r.IntN(10); {
		case n < 6:
			b.WriteString(nastyPieces[r.IntN(len(nastyPieces))])
		case n < 8:
			b.WriteRune(rune(r.IntN(0x2000) + 1))
		case binary:
			for range r.IntN(8) + 1 {
				b.WriteByte(byte(r.IntN(255) + 1)) // NUL-free, often invalid UTF-8
			}
		default:
			b.WriteString(strconv.FormatInt(r.Int64(), 10))
		}
	}
	if !binary {
		return carriableOnly(b.String())
	}
	return b.String()
}

// carriableOnly drops what Render refuses in commands and paths (see carriable),
// keeping every other character, control characters included.
func carriableOnly(s string) string {
	return strings.Map(func(r rune) rune {
		if !carriable(string(r)) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// randCommand is arbitrary text that Render accepts as a command; the typed
// scalars it refuses are covered by TestRenderErrors.
func randCommand(r *rand.Rand) string {
	for {
		if c := randText(r, false); !misreadByYAML11(c) {
			return c
		}
	}
}

// randPath is absolute and unique by its prefix; the rest is arbitrary text.
func randPath(r *rand.Rand, prefix string) string {
	name := randText(r, false)
	return prefix + "/" + strings.ReplaceAll(name, "/", "|") + "f"
}

func TestRenderRandomized(t *testing.T) {
	r := rand.New(rand.NewPCG(20240501, 300))
	roles := []Role{ServerInit, ServerJoin, Agent}
	// u0 and u1 are users that randOSSetup may create.
	owners := []string{"", "root:root", "nobody", "user with space:grp", "ü:ö", "u0", "nobody:u1", "1000:1000", "0", "u0:1000"}
	for i := range 300 {
		in := minimal(roles[r.IntN(len(roles))])
		in.Spec.AgentConfig.AirGapped = r.IntN(4) == 0
		var files []fileCase
		for j := range r.IntN(6) {
			fc := encodedFile(t, randPath(r, fmt.Sprintf("/r%d/%d", i, j)), encodings[r.IntN(len(encodings))], []byte(randText(r, true)))
			fc.in.Owner = owners[r.IntN(len(owners))]
			files = append(files, fc)
			in.Files = append(in.Files, fc.in)
		}
		if in.Role != Agent {
			for j := range r.IntN(3) {
				ext := []string{".crt", ".key"}[r.IntN(2)]
				in.Certificates = append(in.Certificates, File{
					Path: fmt.Sprintf("/var/lib/rancher/k3s/server/tls/c%d%s", j, ext), Permissions: "0644", Content: randText(r, true),
				})
			}
		}
		for range r.IntN(5) {
			in.Spec.PreK3sCommands = append(in.Spec.PreK3sCommands, randCommand(r))
		}
		for range r.IntN(5) {
			in.Spec.PostK3sCommands = append(in.Spec.PostK3sCommands, randCommand(r))
		}
		randOSSetup(r, &in)
		out, err := Render(in)
		if err != nil {
			t.Fatalf("case %d: Render: %v\ninput: %#v", i, err, in)
		}
		checkRoundTrip(t, in, files, out)
		checkOSRoundTrip(t, in, out)
		// Ignition carries the same plan: checked against the cloud-config just
		// verified, file by file and command by command.
		checkSameAsCloudConfig(t, in)
		if t.Failed() {
			t.Fatalf("case %d failed; output:\n%s", i, out)
		}
	}
}

// fixPath turns arbitrary fuzz text into a path Render must accept.
func fixPath(p string) string {
	p = carriableOnly(p)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	switch p[strings.LastIndex(p, "/")+1:] {
	case "", ".", "..":
		p += "f"
	}
	return p
}

// fixCommands splits arbitrary fuzz text into commands that Render accepts.
func fixCommands(s string) []string {
	if s == "" {
		return nil
	}
	cmds := strings.Split(s, "\x00")
	for i, c := range cmds {
		cmds[i] = carriableOnly(c)
	}
	return cmds
}

func FuzzRenderRoundTrip(f *testing.F) {
	f.Add("/etc/motd", []byte("hello {{ ds.meta_data.hostname }}\n"), uint8(0), "/etc/x", []byte("a\nb"), "echo pre", "echo post", uint8(0))
	f.Add("relative/path", []byte("---\n# not a comment\n'\"\n"), uint8(1), "/a b/c", []byte("\xff\xfe\x00bin"), "a\x00b\x00c", "'$(id)'", uint8(1))
	f.Add("/ü/日本/🙂", []byte("\r\n\u2028\ufeff"), uint8(2), "/x/..", []byte("  leading\ntrailing  \n\n"), "{{ x }}", "| > - :", uint8(2))
	f.Add("/dup", []byte("1"), uint8(3), "//dup", []byte("2"), "", "", uint8(0))
	f.Add("/etc/rancher/k3s/config.yaml", []byte(""), uint8(0), "/y", []byte("yes"), "no", "~", uint8(2))
	f.Add("/z", []byte("="), uint8(0), "/w", []byte("0x1F85939849055613594"), "true", "=", uint8(1))
	f.Fuzz(func(t *testing.T, path1 string, content1 []byte, enc uint8, path2 string, content2 []byte, pre, post string, role uint8) {
		in := minimal([]Role{ServerInit, ServerJoin, Agent}[role%3])
		files := []fileCase{
			encodedFile(t, fixPath(path1), encodings[enc%4], content1),
			encodedFile(t, fixPath(path2), "", content2),
		}
		in.Files = []File{files[0].in, files[1].in}
		in.Spec.PreK3sCommands = fixCommands(pre)
		in.Spec.PostK3sCommands = fixCommands(post)

		// Inputs that Render must refuse; which refusal comes first is not the test's
		// business.
		var wantErrs []string
		p1, p2 := path.Clean(files[0].in.Path), path.Clean(files[1].in.Path)
		if p1 == p2 || p1 == k3sConfigPath || p2 == k3sConfigPath {
			wantErrs = append(wantErrs, "is written twice")
		}
		for _, c := range append(append([]string{}, in.Spec.PreK3sCommands...), in.Spec.PostK3sCommands...) {
			if misreadByYAML11(c) {
				wantErrs = append(wantErrs, "would reach cloud-init as a YAML")
			}
		}
		out, err := Render(in)
		if len(wantErrs) > 0 {
			if err == nil || !slices.ContainsFunc(wantErrs, func(w string) bool { return strings.Contains(err.Error(), w) }) {
				t.Fatalf("Render returned %v, want an error containing one of %q", err, wantErrs)
			}
			return
		}
		if err != nil {
			t.Fatalf("Render: %v", err)
		}
		checkRoundTrip(t, in, files, out)
		checkSameAsCloudConfig(t, in)
	})
}
