package cloudinit

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

const scriptBody = "#!/bin/sh\necho the k3s install script\n"

// verifiedInput is an online server whose install script must have the sha256
// of scriptBody, from a mirror the spec names, and whose binary comes from a
// mirror too.
func verifiedInput(sum string) Input {
	in := minimal(ServerJoin)
	in.InstallScriptURL = "https://manager-flag.example.com/install.sh"
	in.Spec.AgentConfig.InstallScriptURL = "https://mirror.example.com/k3s/install.sh"
	in.Spec.AgentConfig.InstallScriptSHA256 = sum
	in.Spec.AgentConfig.ArtifactURL = "https://mirror.example.com/k3s/releases"
	return in
}

// verifyAndInstall are the runcmd entries from the verification on: the
// verification, the install, and what follows.
func verifyAndInstall(t *testing.T, cmds []string) (verify string, rest []string) {
	t.Helper()
	for i, c := range cmds {
		if strings.HasPrefix(c, verifyHeader+"\n") {
			return c, cmds[i+1:]
		}
	}
	t.Fatalf("no verification entry in %q", cmds)
	return "", nil
}

// TestRenderVerifiesTheInstallScript: with installScriptSHA256 the script is
// downloaded to a file (from the spec's mirror, not the manager's URL), checked,
// and run from that file with the binary mirror in its environment; no pipe
// runs it unchecked. Both formats carry the same commands.
func TestRenderVerifiesTheInstallScript(t *testing.T) {
	in := verifiedInput(sha(scriptBody))
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	p := parse(t, out)
	verify, rest := verifyAndInstall(t, p.RunCmd)
	if !strings.Contains(verify, "curl -sfL 'https://mirror.example.com/k3s/install.sh' -o '"+verifiedScriptPath+"'") {
		t.Errorf("verification does not download the spec's script to %s:\n%s", verifiedScriptPath, verify)
	}
	if !strings.Contains(verify, "echo '"+sha(scriptBody)+"  "+verifiedScriptPath+"' | sha256sum -c -") {
		t.Errorf("verification does not check the script's sha256:\n%s", verify)
	}
	wantInstall := "INSTALL_K3S_ARTIFACT_URL='https://mirror.example.com/k3s/releases' INSTALL_K3S_VERSION='v1.35.4+k3s1' sh '" + verifiedScriptPath + "' server"
	if rest[0] != wantInstall {
		t.Errorf("install = %q, want %q", rest[0], wantInstall)
	}
	if strings.Contains(string(out), "| INSTALL_K3S") || strings.Contains(string(out), "manager-flag") {
		t.Errorf("the script is still piped or fetched from the manager's URL:\n%s", out)
	}
	checkSameAsCloudConfig(t, asIgnition(in))
}

// TestRenderMirrorWithoutChecksum: a mirror alone keeps the pipe, with the
// spec's script URL and INSTALL_K3S_ARTIFACT_URL.
func TestRenderMirrorWithoutChecksum(t *testing.T) {
	in := verifiedInput("")
	p := parse(t, render(t, in))
	want := "curl -sfL 'https://mirror.example.com/k3s/install.sh' | INSTALL_K3S_ARTIFACT_URL='https://mirror.example.com/k3s/releases' INSTALL_K3S_VERSION='v1.35.4+k3s1' sh -s - server"
	found := false
	for _, c := range p.RunCmd {
		found = found || c == want
		if strings.HasPrefix(c, verifyHeader) {
			t.Errorf("a verification without checksums: %q", c)
		}
	}
	if !found {
		t.Errorf("runcmd %q lacks %q", p.RunCmd, want)
	}
}

// TestRenderVerifiesAirGappedFiles: air-gapped, the script on disk and each
// listed file are checked after preK3sCommands (which may put them in place)
// and before the install; nothing is downloaded.
func TestRenderVerifiesAirGappedFiles(t *testing.T) {
	in := minimal(Agent)
	in.Spec.PreK3sCommands = []string{"echo pre"}
	in.Spec.AgentConfig = bootstrapv1.KThreesAgentConfig{
		AirGapped: true, AirGappedInstallScriptPath: "/opt/k3s/install.sh", InstallScriptSHA256: sha(scriptBody),
		AirGappedChecksums: []bootstrapv1.FileChecksum{
			{Path: "/usr/local/bin/k3s", SHA256: sha("binary")},
			{Path: "/var/lib/rancher/k3s/agent/images/k3s-airgap-images-amd64.tar.zst", SHA256: sha("images")},
		},
	}
	p := parse(t, render(t, in))
	if p.RunCmd[0] != "echo pre" {
		t.Fatalf("runcmd[0] = %q, want the user's pre command first", p.RunCmd[0])
	}
	verify, rest := verifyAndInstall(t, p.RunCmd)
	for _, want := range []string{
		"echo '" + sha(scriptBody) + "  /opt/k3s/install.sh' | sha256sum -c -",
		"echo '" + sha("binary") + "  /usr/local/bin/k3s' | sha256sum -c -",
		"echo '" + sha("images") + "  /var/lib/rancher/k3s/agent/images/k3s-airgap-images-amd64.tar.zst' | sha256sum -c -",
	} {
		if !strings.Contains(verify, want) {
			t.Errorf("verification lacks %q:\n%s", want, verify)
		}
	}
	if strings.Contains(verify, "curl") {
		t.Errorf("an air-gapped verification downloads:\n%s", verify)
	}
	if !strings.HasPrefix(rest[0], "INSTALL_K3S_SKIP_DOWNLOAD=true ") || !strings.HasSuffix(rest[0], "sh '/opt/k3s/install.sh' agent") {
		t.Errorf("install = %q", rest[0])
	}
	checkSameAsCloudConfig(t, asIgnition(in))
}

// TestVerificationStopsOnMismatch runs the verification entry with sh, in a
// scratch directory standing for /run (and a curl that serves scriptBody): a
// matching checksum lets the script go on to the install; a mismatching one,
// or a missing file, ends it with status 1 before the install, says why on
// stderr and in the failure marker.
func TestVerificationStopsOnMismatch(t *testing.T) {
	for _, tc := range []struct {
		name, sum string
		extra     *bootstrapv1.FileChecksum
		wantFail  string
	}{
		{name: "match", sum: sha(scriptBody)},
		{name: "script mismatch", sum: sha("something else"), wantFail: "the k3s install script"},
		{name: "download fails", sum: sha(scriptBody), wantFail: "could not download the k3s install script from https://fail.example.com/install.sh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := verifiedInput(tc.sum)
			if strings.Contains(tc.name, "download") {
				in.Spec.AgentConfig.InstallScriptURL = "https://fail.example.com/install.sh"
			}
			verify, rest := verifyAndInstall(t, parse(t, render(t, in)).RunCmd)
			runVerification(t, dir, verify, rest[0], tc.wantFail)
		})
	}
	t.Run("air-gapped file missing", func(t *testing.T) {
		dir := t.TempDir()
		in := minimal(Agent)
		in.Spec.AgentConfig = bootstrapv1.KThreesAgentConfig{AirGapped: true,
			AirGappedChecksums: []bootstrapv1.FileChecksum{{Path: "/nonexistent/k3s", SHA256: sha("binary")}}}
		verify, rest := verifyAndInstall(t, parse(t, render(t, in)).RunCmd)
		runVerification(t, dir, verify, rest[0], "air-gapped file /nonexistent/k3s is missing or does not have sha256 "+sha("binary"))
	})
}

func runVerification(t *testing.T, dir, verify, install, wantFail string) {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// curl -sfL URL -o FILE: serves scriptBody, fails for fail.example.com.
	curl := "#!/bin/sh\ncase \"$2\" in *fail.example.com*) exit 22;; esac\nprintf '%s' '" + scriptBody + "' > \"$4\"\n"
	if err := os.WriteFile(filepath.Join(bin, "curl"), []byte(curl), 0o755); err != nil {
		t.Fatal(err)
	}
	script := strings.NewReplacer("/run/", dir+"/run/").Replace(verify) + "\necho installing: " + shellQuote(install) + "\n"
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	marker, _ := os.ReadFile(filepath.Join(dir, strings.TrimPrefix(FailureMarkerPath, "/")))
	if wantFail == "" {
		if err != nil || !strings.Contains(string(stdout), "installing:") || len(marker) > 0 {
			t.Fatalf("matching checksum: err %v, stdout %q, stderr %q, marker %q; want the install to run", err, stdout, stderr.String(), marker)
		}
		return
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("err = %v, want exit status 1", err)
	}
	if strings.Contains(string(stdout), "installing:") {
		t.Errorf("the install ran after a failed verification")
	}
	if !strings.Contains(string(marker), wantFail) || !strings.Contains(stderr.String(), "capk3s: bootstrap failed: "+wantFail) {
		t.Errorf("marker %q, stderr %q; want both to say %q", marker, stderr.String(), wantFail)
	}
}

// TestRenderRefusesBadInstallSettings: what the webhook refuses, the renderer
// refuses too, naming the field; every value here would reach a shell line.
func TestRenderRefusesBadInstallSettings(t *testing.T) {
	good := sha("x")
	for name, tc := range map[string]struct {
		ac   bootstrapv1.KThreesAgentConfig
		want string
	}{
		"uppercase sum":        {bootstrapv1.KThreesAgentConfig{InstallScriptSHA256: strings.ToUpper(good)}, "installScriptSHA256"},
		"short sum":            {bootstrapv1.KThreesAgentConfig{InstallScriptSHA256: "abc"}, "installScriptSHA256"},
		"http script":          {bootstrapv1.KThreesAgentConfig{InstallScriptURL: "http://mirror.example.com/install.sh"}, "installScriptURL"},
		"script url shell":     {bootstrapv1.KThreesAgentConfig{InstallScriptURL: "https://m.example.com/i.sh;reboot"}, "installScriptURL"},
		"script url quote":     {bootstrapv1.KThreesAgentConfig{InstallScriptURL: "https://m.example.com/'$(id)'"}, "installScriptURL"},
		"script url userinfo":  {bootstrapv1.KThreesAgentConfig{InstallScriptURL: "https://u:p@m.example.com/i.sh"}, "installScriptURL"},
		"artifact query":       {bootstrapv1.KThreesAgentConfig{ArtifactURL: "https://m.example.com/k3s?x=1"}, "artifactURL"},
		"artifact slash":       {bootstrapv1.KThreesAgentConfig{ArtifactURL: "https://m.example.com/k3s/"}, "artifactURL"},
		"artifact air-gapped":  {bootstrapv1.KThreesAgentConfig{AirGapped: true, ArtifactURL: "https://m.example.com/k3s"}, "artifactURL"},
		"script air-gapped":    {bootstrapv1.KThreesAgentConfig{AirGapped: true, InstallScriptURL: "https://m.example.com/i.sh"}, "installScriptURL"},
		"checksums online":     {bootstrapv1.KThreesAgentConfig{AirGappedChecksums: []bootstrapv1.FileChecksum{{Path: "/usr/local/bin/k3s", SHA256: good}}}, "airGappedChecksums"},
		"checksum path":        {bootstrapv1.KThreesAgentConfig{AirGapped: true, AirGappedChecksums: []bootstrapv1.FileChecksum{{Path: "bin/k3s", SHA256: good}}}, "airGappedChecksums[0].path"},
		"checksum path shell":  {bootstrapv1.KThreesAgentConfig{AirGapped: true, AirGappedChecksums: []bootstrapv1.FileChecksum{{Path: "/bin/k3s;id", SHA256: good}}}, "airGappedChecksums[0].path"},
		"checksum sum":         {bootstrapv1.KThreesAgentConfig{AirGapped: true, AirGappedChecksums: []bootstrapv1.FileChecksum{{Path: "/bin/k3s", SHA256: "nope"}}}, "airGappedChecksums[0].sha256"},
		"checksum path repeat": {bootstrapv1.KThreesAgentConfig{AirGapped: true, AirGappedChecksums: []bootstrapv1.FileChecksum{{Path: "/bin/k3s", SHA256: good}, {Path: "/bin/k3s", SHA256: good}}}, "airGappedChecksums[1].path"},
	} {
		t.Run(name, func(t *testing.T) {
			in := minimal(Agent)
			in.Spec.AgentConfig = tc.ac
			_, err := Render(in)
			if err == nil || !strings.Contains(err.Error(), "spec.agentConfig."+tc.want) {
				t.Fatalf("Render error = %v, want one naming spec.agentConfig.%s", err, tc.want)
			}
		})
	}
}
