package bootos

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
)

// TestVerifiedInstall boots installs whose checksums the spec gives, with the
// real cloud-init and sh, sha256sum and the stand-in curl and install script:
// a matching install script is downloaded to a file, checked and run with the
// binary mirror in its environment; a mismatching one, or an air-gapped file
// that is not there, stops the boot before the install, without the sentinel,
// saying why in the marker and the console log.
func TestVerifiedInstall(t *testing.T) {
	requireRoots(t)
	script, err := os.ReadFile("testdata/standins/install.sh")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(script)
	scriptSum := hex.EncodeToString(sum[:])
	wrongSum := strings.Repeat("0", 64)
	online := func(sum string) cloudinit.Input {
		return cloudinit.Input{Role: cloudinit.Agent, Version: version, Token: agentTok, ServerURL: serverURL,
			Spec: bootstrapv1.KThreesConfigSpec{AgentConfig: bootstrapv1.KThreesAgentConfig{
				InstallScriptURL: "https://mirror.example.com/k3s/install.sh", InstallScriptSHA256: sum,
				ArtifactURL: "https://mirror.example.com/k3s/releases",
			}}}
	}
	airGapped := online(scriptSum)
	airGapped.Spec.AgentConfig = bootstrapv1.KThreesAgentConfig{AirGapped: true, InstallScriptSHA256: scriptSum,
		// The root has no k3s before the install.
		AirGappedChecksums: []bootstrapv1.FileChecksum{{Path: "/usr/local/bin/k3s", SHA256: wrongSum}}}
	for _, c := range []struct {
		name   string
		in     cloudinit.Input
		reason string // "" = the install runs
	}{
		{name: "script-matches", in: online(scriptSum)},
		{name: "script-mismatch", in: online(wrongSum),
			reason: "the k3s install script /run/capk3s/install.sh is missing or does not have sha256 " + wrongSum},
		{name: "air-gapped-binary-missing", in: airGapped,
			reason: "air-gapped file /usr/local/bin/k3s is missing or does not have sha256 " + wrongSum},
	} {
		bootEverySuite(t, c.name, c.in, func(t *testing.T, m *machine) {
			if c.reason == "" {
				checkSucceeded(t, m)
				checkCalls(t, m, []string{
					"curl -sfL https://mirror.example.com/k3s/install.sh -o /run/capk3s/install.sh",
					"install agent version=" + version + " skip-download= skip-start=",
					"systemctl is-active --quiet k3s-agent",
				})
				if got := m.read("/var/log/capk3s/artifact-url"); got != "https://mirror.example.com/k3s/releases\n" {
					t.Errorf("the install script's INSTALL_K3S_ARTIFACT_URL = %q", got)
				}
				return
			}
			checkFailureReported(t, m, c.reason, func(call string) bool { return strings.HasPrefix(call, "install ") })
			if got := m.read(failed); got != c.reason+"\n" {
				t.Errorf("failure marker = %q, want exactly %q", got, c.reason)
			}
		})
	}
}
