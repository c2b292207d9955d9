package k3smodel

import "testing"

func TestParseRelease(t *testing.T) {
	for in, want := range map[string]Release{
		"v1.34.9+k3s1":     {34, 9, 1},
		"1.36.2+k3s2":      {36, 2, 2},
		"v1.35.0":          {35, 0, 1},
		"v1.35.1-rc1+k3s1": {35, 1, 1},
	} {
		got, err := ParseRelease(in)
		if err != nil || got != want {
			t.Errorf("ParseRelease(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "latest", "v2.1.0", "v1.34"} {
		if _, err := ParseRelease(bad); err == nil {
			t.Errorf("ParseRelease(%q) accepted", bad)
		}
	}
}

func TestAtLeastAndKnown(t *testing.T) {
	r, _ := ParseRelease("v1.34.2+k3s1")
	if !r.AtLeast(34, 2) || r.AtLeast(34, 3) || !r.AtLeast(32, 10) || r.AtLeast(35, 0) {
		t.Errorf("AtLeast wrong for %+v", r)
	}
	if _, err := r.Known(); err != nil {
		t.Error(err)
	}
	old, _ := ParseRelease("v1.31.4+k3s1")
	if _, err := old.Known(); err == nil {
		t.Error("v1.31 is not played, but Known accepted it")
	}
}
