package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// installVerificationFailedReason: a checksum check before the install failed
// and stopped the bootstrap, as the machine's script would.
const installVerificationFailedReason = "InstallVerificationFailed"

// What the simulated machine's network and image hold, so that checksums of them
// are known: every URL a simulated curl fetches serves InstallScript, and an image
// carries the k3s binary and image tarball of its release (ImageK3sBinary,
// ImageAirgapImages) at k3s's default paths, and the install script at whatever
// path an air-gapped install runs.
const (
	// InstallScript is the simulator's stand-in for k3s's install.sh.
	InstallScript = "#!/bin/sh\n# the simulator's k3s install script\n"
	// ImageK3sBinaryPath is where install.sh puts k3s (BIN_DIR, /usr/local/bin),
	// and so where an air-gapped image carries it.
	ImageK3sBinaryPath = "/usr/local/bin/k3s"
	// ImageAirgapImagesPath is a tarball in k3s's agent images directory, which the
	// k3s agent imports at start (/var/lib/rancher/k3s/agent/images).
	ImageAirgapImagesPath = "/var/lib/rancher/k3s/agent/images/k3s-airgap-images-amd64.tar.zst"
)

// ImageK3sBinary is the content of the k3s binary of release on a simulated image.
func ImageK3sBinary(release string) string { return "simulated k3s binary " + release + "\n" }

// ImageAirgapImages is the content of the image tarball of release on a simulated image.
func ImageAirgapImages(release string) string { return "simulated k3s images " + release + "\n" }

// SHA256 is s's sha256 as sha256sum prints it.
func SHA256(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// machineFiles is what the commands before the install can read: write_files,
// downloads, and the image.
type machineFiles struct {
	b       *bootData
	release string
	dl      map[string]string
}

func (m machineFiles) read(path string) (string, bool) {
	if c, ok := m.dl[path]; ok {
		return c, true
	}
	if c, ok := m.b.files[path]; ok {
		return string(c), true
	}
	switch {
	case path == ImageK3sBinaryPath:
		return ImageK3sBinary(m.release), true
	case path == ImageAirgapImagesPath:
		return ImageAirgapImages(m.release), true
	case m.b.install.skipDownload && path == m.b.install.script:
		return InstallScript, true
	}
	return "", false
}

// playVerification plays the commands before the install as far as they check
// checksums: "curl ... -o FILE" downloads InstallScript into FILE, and
// "echo 'SUM  FILE' | sha256sum -c" fails when FILE is missing or has another
// sha256. A failed check must be followed by "|| ... exit N" (N > 0) that stops
// the script before the install: then the machine fails with the check's
// reason; without it the install would run unchecked, which the data must not
// ask for. release is the k3s release the image carries.
func (b *bootData) playVerification(release string) error {
	m := machineFiles{b: b, release: release, dl: map[string]string{}}
	for _, c := range b.commands {
		if _, isInstall, _ := parseInstallCommand(c); isInstall {
			return nil
		}
		f, err := syntax.NewParser().Parse(strings.NewReader(c), "")
		if err != nil {
			continue // not one the simulator reads; install.go judges the install
		}
		for _, st := range f.Stmts {
			if err := m.playStmt(st); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m machineFiles) playStmt(st *syntax.Stmt) error {
	syntax.Walk(st, func(n syntax.Node) bool {
		if call, ok := n.(*syntax.CallExpr); ok && len(call.Args) > 0 && literal(call.Args[0]) == "curl" {
			for i := 1; i+1 < len(call.Args); i++ {
				if literal(call.Args[i]) == "-o" {
					m.dl[literal(call.Args[i+1])] = InstallScript
				}
			}
		}
		return true
	})
	or, ok := st.Cmd.(*syntax.BinaryCmd)
	if !ok || or.Op != syntax.OrStmt {
		return m.checkUnguarded(st)
	}
	mismatch := m.checksumMismatch(or.X)
	if mismatch == "" {
		return nil
	}
	if !exits(or.Y) {
		return fmt.Errorf("%s, and the install runs anyway: the check does not stop the script", mismatch)
	}
	return &verificationError{msg: mismatch + ": the bootstrap stops before the install; k3s is not installed"}
}

// checkUnguarded: a checksum check with nothing after it that stops the script.
func (m machineFiles) checkUnguarded(st *syntax.Stmt) error {
	if mismatch := m.checksumMismatch(st); mismatch != "" {
		return fmt.Errorf("%s, and the install runs anyway: the check does not stop the script", mismatch)
	}
	return nil
}

// checksumMismatch reads "echo LINES | sha256sum -c ..." (sha256sum's check
// format: "SUM  FILE" per line) and says which file fails, or "" if all match
// or n is no such check.
func (m machineFiles) checksumMismatch(n syntax.Node) string {
	if st, ok := n.(*syntax.Stmt); ok {
		n = st.Cmd
	}
	pipe, ok := n.(*syntax.BinaryCmd)
	if !ok || pipe.Op != syntax.Pipe {
		return ""
	}
	echo, ok1 := pipe.X.Cmd.(*syntax.CallExpr)
	check, ok2 := pipe.Y.Cmd.(*syntax.CallExpr)
	if !ok1 || !ok2 || len(echo.Args) != 2 || literal(echo.Args[0]) != "echo" || len(check.Args) < 2 ||
		literal(check.Args[0]) != "sha256sum" || literal(check.Args[1]) != "-c" {
		return ""
	}
	for line := range strings.SplitSeq(literal(echo.Args[1]), "\n") {
		sum, file, found := strings.Cut(line, "  ")
		if !found {
			return fmt.Sprintf("sha256sum -c cannot read the line %q", line)
		}
		content, ok := m.read(file)
		if !ok {
			return fmt.Sprintf("%s is missing", file)
		}
		if got := SHA256(content); got != sum {
			return fmt.Sprintf("%s has sha256 %s, not %s", file, got, sum)
		}
	}
	return ""
}

// exits says whether n, run after a failed check, ends the script with a
// non-zero status: an "exit N" call, N > 0, in it.
func exits(n syntax.Node) bool {
	found := false
	syntax.Walk(n, func(n syntax.Node) bool {
		if call, ok := n.(*syntax.CallExpr); ok && len(call.Args) == 2 && literal(call.Args[0]) == "exit" {
			if code := literal(call.Args[1]); code != "" && code != "0" {
				found = true
			}
		}
		return !found
	})
	return found
}

// verificationError is a check that stopped the bootstrap as meant: the machine
// reports it, rather than calling the data invalid.
type verificationError struct{ msg string }

func (e *verificationError) Error() string { return e.msg }
