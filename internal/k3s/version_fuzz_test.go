package k3s

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseVersion checks ParseVersion, NormalizeVersion and CompareVersions on any
// strings: nothing panics; normalizing is idempotent and changes no parse; a parsed
// version written back with its "v" parses to the same release; an error quotes the
// input, so a user sees which value was refused; and the order is antisymmetric, so
// that a rollout never sees two versions each newer than the other.
func FuzzParseVersion(f *testing.F) {
	for _, s := range [][2]string{
		{"v1.31.4+k3s1", "1.31.4+k3s1"}, {"v1.31.4+k3s2", "v1.31.4+k3s10"}, {"v1.32.0-rc1+k3s1", "v1.32.0"},
		{"v1.031.4+k3s1", " v1.31.4+k3s1 "}, {"latest", ""}, {"v1.31", "vv1.31.4"}, {"v1.31.4+rke2r1", "v1.31.4-+k3s1"},
		{"v99999999999999999999.0.0", "v1.2.3-01"}, {"v1.2.3-a..b+k3s1", "\tv1.2.3\n"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		n := NormalizeVersion(a)
		if NormalizeVersion(n) != n {
			t.Fatalf("NormalizeVersion is not idempotent: %q -> %q -> %q", a, n, NormalizeVersion(n))
		}
		va, err := ParseVersion(a)
		vn, errN := ParseVersion(n)
		if (err == nil) != (errN == nil) || (err == nil && va.String() != vn.String()) {
			t.Fatalf("ParseVersion(%q) = %v, %v but ParseVersion(NormalizeVersion) = %v, %v", a, va, err, vn, errN)
		}
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(a)) {
				t.Fatalf("the error for %q does not name it: %v", a, err)
			}
			return
		}
		written := "v" + va.String()
		back, err := ParseVersion(written)
		if err != nil || back.String() != va.String() || CompareVersions(back, va) != 0 {
			t.Fatalf("%q parses to %v, written %q, which parses to %v, %v", a, va, written, back, err)
		}
		vb, err := ParseVersion(b)
		if err != nil {
			return
		}
		if ab, ba := CompareVersions(va, vb), CompareVersions(vb, va); ab != -ba {
			t.Fatalf("CompareVersions(%v, %v) = %d but CompareVersions(%v, %v) = %d", va, vb, ab, vb, va, ba)
		}
	})
}
