package k3smodel

import "testing"

func TestInstalledRelease(t *testing.T) {
	if got, err := InstalledRelease("v1.36.3+k3s1", false, "v1.35.4+k3s1"); err != nil || got != "v1.36.3+k3s1" {
		t.Errorf("a download installs what is asked: %q, %v", got, err)
	}
	if got, err := InstalledRelease("v1.36.3+k3s1", true, "v1.35.4+k3s1"); err != nil || got != "v1.35.4+k3s1" {
		t.Errorf("a skipped download runs the image's binary: %q, %v", got, err)
	}
	if _, err := InstalledRelease("v1.36.3+k3s1", true, ""); err == nil {
		t.Error("a skipped download on an image without k3s succeeded")
	}
	for in, want := range map[[2]string]bool{
		{"true", ""}: true, {"binary", ""}: true, {"selinux", ""}: false, {"", ""}: false, {"", "true"}: true, {"yes", ""}: false,
	} {
		if got := SkipsDownload(in[0], in[1]); got != want {
			t.Errorf("SkipsDownload(%q, %q) = %v, want %v", in[0], in[1], got, want)
		}
	}
}
