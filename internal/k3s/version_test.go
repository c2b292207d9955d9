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
