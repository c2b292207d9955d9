package sim

import (
	"errors"
	"strings"
	"testing"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
)

// TestPlayVerification: the machine downloads InstallScript and its image holds
// the release's binary and images; a checksum that matches lets the install
// run, one that does not (or a missing file) stops the bootstrap with the
// reason, in both formats.
func TestPlayVerification(t *testing.T) {
	t.Parallel()
	const release = "v1.35.4+k3s1"
	online := func(sum string) cloudinit.Input {
		in := cloudinit.Input{Role: cloudinit.Agent, Version: release, Token: "K10abc::node:secret", ServerURL: "https://cp.example.com:6443"}
		in.Spec.AgentConfig = bootstrapv1.KThreesAgentConfig{InstallScriptSHA256: sum, ArtifactURL: "https://mirror.example.com/k3s"}
		return in
	}
	airGapped := func(binary, images string) cloudinit.Input {
		in := online(SHA256(InstallScript))
		in.Spec.AgentConfig = bootstrapv1.KThreesAgentConfig{AirGapped: true, InstallScriptSHA256: SHA256(InstallScript),
			AirGappedChecksums: []bootstrapv1.FileChecksum{{Path: ImageK3sBinaryPath, SHA256: binary}, {Path: ImageAirgapImagesPath, SHA256: images}}}
		return in
	}
	for _, tc := range []struct {
		name string
		in   cloudinit.Input
		want string // "" = the install runs
	}{
		{name: "online, script matches", in: online(SHA256(InstallScript))},
		{name: "online, script differs", in: online(SHA256("another script")), want: "/run/capk3s/install.sh has sha256 " + SHA256(InstallScript)},
		{name: "air-gapped, files match", in: airGapped(SHA256(ImageK3sBinary(release)), SHA256(ImageAirgapImages(release)))},
		{name: "air-gapped, binary of another release", in: airGapped(SHA256(ImageK3sBinary("v1.34.9+k3s1")), SHA256(ImageAirgapImages(release))),
			want: ImageK3sBinaryPath + " has sha256"},
		{name: "air-gapped, file the image lacks", in: func() cloudinit.Input {
			in := airGapped(SHA256(ImageK3sBinary(release)), SHA256(ImageAirgapImages(release)))
			in.Spec.AgentConfig.AirGappedChecksums[1].Path = "/opt/images/extra.tar"
			return in
		}(), want: "/opt/images/extra.tar is missing"},
	} {
		for _, format := range []bootstrapv1.Format{bootstrapv1.CloudConfig, bootstrapv1.Ignition} {
			t.Run(tc.name+"/"+string(format), func(t *testing.T) {
				in := tc.in
				in.Spec.Format = format
				b, err := readBootData(mustRender(t, in), string(format))
				if err != nil {
					t.Fatal(err)
				}
				err = b.playVerification(release)
				var v *verificationError
				switch {
				case tc.want == "" && err != nil:
					t.Fatalf("playVerification = %v, want the install to run", err)
				case tc.want != "" && (!errors.As(err, &v) || !strings.Contains(err.Error(), tc.want)):
					t.Fatalf("playVerification = %v, want a stopped bootstrap saying %q", err, tc.want)
				}
			})
		}
	}
}

// TestPlayVerificationRefusesUnguardedChecks: a check whose failure does not
// stop the script would let an unchecked install run; such data is invalid.
func TestPlayVerificationRefusesUnguardedChecks(t *testing.T) {
	t.Parallel()
	for name, cmd := range map[string]string{
		"no guard":      "- echo '" + SHA256("x") + "  /usr/local/bin/k3s' | sha256sum -c -\n",
		"guard goes on": "- echo '" + SHA256("x") + "  /usr/local/bin/k3s' | sha256sum -c - || echo mismatch\n",
		"exit 0":        "- echo '" + SHA256("x") + "  /usr/local/bin/k3s' | sha256sum -c - || exit 0\n",
	} {
		t.Run(name, func(t *testing.T) {
			data := strings.Replace(minimal("", ""), "runcmd:\n", "runcmd:\n"+cmd, 1)
			b, err := parseCloudConfig([]byte(data))
			if err != nil {
				t.Fatal(err)
			}
			err = b.playVerification("v1.35.4+k3s1")
			var v *verificationError
			if err == nil || errors.As(err, &v) || !strings.Contains(err.Error(), "the install runs anyway") {
				t.Fatalf("playVerification = %v, want the data refused: the install runs anyway", err)
			}
		})
	}
	// Guarded by an exit, the same mismatch stops the bootstrap as meant.
	data := strings.Replace(minimal("", ""), "runcmd:\n", "runcmd:\n- echo '"+SHA256("x")+"  /usr/local/bin/k3s' | sha256sum -c - || { echo bad >&2; exit 1; }\n", 1)
	b, err := parseCloudConfig([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	var v *verificationError
	if err := b.playVerification("v1.35.4+k3s1"); !errors.As(err, &v) {
		t.Fatalf("playVerification = %v, want a stopped bootstrap", err)
	}
}
