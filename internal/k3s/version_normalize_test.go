package k3s

import "testing"

// The normalisers differ in one respect only, on purpose: NormalizeVersion (and so
// ParseVersion) trims surrounding whitespace, WithLeadingV and InstallVersion do not.
// Each keeps what its callers did before the normalisers met here: the control
// plane's defaulting trims its version, the KThreesConfig defaulting stores the
// version as written (a stray space is then refused by the schema's pattern), and
// the renderer refuses any value that is not exactly what the install script gets.
func TestWithLeadingV(t *testing.T) {
	for in, want := range map[string]string{
		"v1.31.4+k3s1":  "v1.31.4+k3s1",
		"1.31.4+k3s1":   "v1.31.4+k3s1",
		"":              "",
		" 1.31.4+k3s1":  "v 1.31.4+k3s1",
		"v1.31.4+k3s1 ": "v1.31.4+k3s1 ",
		"  ":            "v  ",
		"latest":        "vlatest",
	} {
		if got := WithLeadingV(in); got != want {
			t.Errorf("WithLeadingV(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNormalizeVersion(t *testing.T) {
	for in, want := range map[string]string{
		"v1.31.4+k3s1":     "v1.31.4+k3s1",
		"1.31.4+k3s1":      "v1.31.4+k3s1",
		"":                 "",
		" 1.31.4+k3s1":     "v1.31.4+k3s1",
		"\tv1.31.4+k3s1\n": "v1.31.4+k3s1",
		"  ":               "",
	} {
		if got := NormalizeVersion(in); got != want {
			t.Errorf("NormalizeVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

// InstallVersion is the renderer's check (it was cloudinit's normalizeVersion): the
// cases and messages are the ones users saw from it.
func TestInstallVersion(t *testing.T) {
	for in, want := range map[string]string{
		"v1.35.4+k3s1":     "v1.35.4+k3s1",
		"1.35.4+k3s1":      "v1.35.4+k3s1",
		"1.31.4":           "v1.31.4",
		"v1.34.0-rc1+k3s2": "v1.34.0-rc1+k3s2",
	} {
		if got, err := InstallVersion(in); err != nil || got != want {
			t.Errorf("InstallVersion(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for bad, message := range map[string]string{
		"":              "version is required",
		"1.2":           `version "v1.2" is not a k3s version such as v1.35.4+k3s1`,
		"v1.2.3+k3s":    `version "v1.2.3+k3s" is not a k3s version such as v1.35.4+k3s1`,
		"v1.2.3+rke2r1": `version "v1.2.3+rke2r1" is not a k3s version such as v1.35.4+k3s1`,
		"v1.2.3 ":       `version "v1.2.3 " is not a k3s version such as v1.35.4+k3s1`,
		" v1.2.3":       `version "v v1.2.3" is not a k3s version such as v1.35.4+k3s1`,
		"vv1.2.3":       `version "vv1.2.3" is not a k3s version such as v1.35.4+k3s1`,
		"v1.2.3$(id)":   `version "v1.2.3$(id)" is not a k3s version such as v1.35.4+k3s1`,
	} {
		if got, err := InstallVersion(bad); err == nil || err.Error() != message {
			t.Errorf("InstallVersion(%q) = %q, %v; want the error %q", bad, got, err, message)
		}
	}
}
