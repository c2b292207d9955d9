package k3s

import "testing"

func TestParseVersion(t *testing.T) {
	cases := []struct {
		in      string
		want    string // semver String(), "" for an error
		wantErr bool
	}{
		{in: "v1.31.4+k3s1", want: "1.31.4+k3s1"},
		{in: "1.31.4+k3s1", want: "1.31.4+k3s1"},
		{in: "v1.31.4", want: "1.31.4"},
		{in: "v1.32.0-rc1+k3s2", want: "1.32.0-rc1+k3s2"},
		{in: "", wantErr: true},
		{in: "latest", wantErr: true},
		{in: "v1.31", wantErr: true},
		{in: "v1.31.4+k3s1; rm -rf /", wantErr: true},
		{in: "v1.31.4+rke2r1", wantErr: true},
	}
	for _, tc := range cases {
		got, err := ParseVersion(tc.in)
		if tc.wantErr {
			if err == nil {
				t.Errorf("ParseVersion(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestVersionsCompareByValue(t *testing.T) {
	a, _ := ParseVersion("1.31.4+k3s1")
	b, _ := ParseVersion("v1.31.4+k3s1")
	if !a.Equals(b) {
		t.Errorf("1.31.4+k3s1 and v1.31.4+k3s1 differ: %v vs %v", a, b)
	}
	older, _ := ParseVersion("v1.9.0")
	newer, _ := ParseVersion("v1.10.0")
	if !older.LT(newer) {
		t.Error("v1.9.0 must be older than v1.10.0 (a string compare gets this wrong)")
	}
}

// k3s builds of one Kubernetes release are ordered by their number, which semantic
// versioning ignores and CAPI's build-tag comparison cannot order.
func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"v1.31.4+k3s1", "v1.31.4+k3s2", -1},
		{"v1.31.4+k3s10", "v1.31.4+k3s2", 1},
		{"v1.31.4+k3s1", "1.31.4+k3s1", 0},
		{"v1.31.4", "v1.31.4+k3s1", -1},
		{"v1.30.9+k3s5", "v1.31.0+k3s1", -1},
		{"v1.31.0-rc1+k3s1", "v1.31.0+k3s1", -1},
	} {
		a, errA := ParseVersion(tc.a)
		b, errB := ParseVersion(tc.b)
		if errA != nil || errB != nil {
			t.Fatalf("parsing %s, %s: %v %v", tc.a, tc.b, errA, errB)
		}
		if got := CompareVersions(a, b); got != tc.want {
			t.Errorf("CompareVersions(%s, %s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
