package cloudinit

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// Verified installs. k3s's install script checks the binary it downloads
// against the sha256sum-<arch>.txt served beside it, but nothing checks the
// script itself (curl | sh runs whatever the URL serves), and with
// INSTALL_K3S_SKIP_DOWNLOAD it checks nothing at all. So, when the user gives
// checksums, the machine downloads the script to a file instead of piping it,
// and one runcmd entry right before the install checks the script and the
// air-gapped files. On the first failure it says why on stderr and in
// FailureMarkerPath and exits the script (runcmd's, or the Ignition unit's):
// k3s is not installed and no sentinel is written, as with the file check in
// cloudconfig_check.go. Each check is one plain shell line, with no functions,
// so that it reads the same in both formats and the simulator can play it.

// verifiedScriptPath is where a checked install script is downloaded to; /run
// is a tmpfs, so it does not outlive the boot.
const verifiedScriptPath = "/run/capk3s/install.sh"

// verifyHeader starts the verification entry, so that it can be found in runcmd.
const verifyHeader = "# capk3s: verify the k3s install against the checksums given"

var (
	sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)
	// installURLChars and checksumPathChars leave out every character sh gives a
	// meaning to ($ ` \ ' " ; & | < > ( ) { } * ? [ ] ~ # ! and spaces): the
	// values reach command lines, and although they are quoted there, a
	// value that needs quoting is not a URL or path anyone means.
	installURLChars   = regexp.MustCompile(`^[A-Za-z0-9._:/%=+,@-]+$`)
	checksumPathChars = regexp.MustCompile(`^[A-Za-z0-9._/+@-]+$`)
)

// InstallErrors checks spec.agentConfig's install settings: the renderer
// refuses what the webhook refuses, with the same field paths.
func InstallErrors(ac *bootstrapv1.KThreesAgentConfig, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ac.InstallScriptURL != "" {
		p := fldPath.Child("installScriptURL")
		errs = append(errs, installURLErrors(ac.InstallScriptURL, true, p)...)
		if ac.AirGapped {
			errs = append(errs, field.Forbidden(p, "an air-gapped machine runs the script on disk (airGappedInstallScriptPath) and downloads nothing"))
		}
	}
	if ac.InstallScriptSHA256 != "" && !sha256Hex.MatchString(ac.InstallScriptSHA256) {
		errs = append(errs, field.Invalid(fldPath.Child("installScriptSHA256"), ac.InstallScriptSHA256,
			"must be a sha256 as sha256sum prints it: 64 lowercase hex digits"))
	}
	if ac.ArtifactURL != "" {
		p := fldPath.Child("artifactURL")
		errs = append(errs, installURLErrors(ac.ArtifactURL, false, p)...)
		if ac.AirGapped {
			errs = append(errs, field.Forbidden(p, "an air-gapped install skips the download (INSTALL_K3S_SKIP_DOWNLOAD), so a mirror would be ignored"))
		}
	}
	p := fldPath.Child("airGappedChecksums")
	if len(ac.AirGappedChecksums) > 0 && !ac.AirGapped {
		errs = append(errs, field.Forbidden(p, "only with airGapped: online, the install script checks the binary it downloads against the release's sha256sum file; use artifactURL for a mirror"))
	}
	seen := map[string]int{}
	for i, c := range ac.AirGappedChecksums {
		errs = append(errs, checksumPathErrors(c.Path, p.Index(i).Child("path"))...)
		if j, dup := seen[c.Path]; dup {
			errs = append(errs, field.Duplicate(p.Index(i).Child("path"), fmt.Sprintf("%s (also %s)", c.Path, p.Index(j))))
		}
		seen[c.Path] = i
		if !sha256Hex.MatchString(c.SHA256) {
			errs = append(errs, field.Invalid(p.Index(i).Child("sha256"), c.SHA256, "must be a sha256 as sha256sum prints it: 64 lowercase hex digits"))
		}
	}
	return errs
}

// installURLErrors requires an https URL with a host and no user info (it would
// show in logs). A mirror prefix takes no query or fragment, and no trailing
// slash: the script appends "/<version>/k3s" to it.
func installURLErrors(s string, query bool, fldPath *field.Path) field.ErrorList {
	if !installURLChars.MatchString(s) {
		return field.ErrorList{field.Invalid(fldPath, s, "must be an https URL of letters, digits and . _ : / % = + , @ - only: it reaches a shell command line")}
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Scheme != "https" || u.Host == "" || u.Opaque != "":
		return field.ErrorList{field.Invalid(fldPath, s, "must be an https:// URL with a host, such as https://mirror.example.com/k3s")}
	case u.User != nil:
		return field.ErrorList{field.Invalid(fldPath, s, "must not carry user information: it would appear in logs")}
	case !query && (strings.ContainsAny(s, "?#") || strings.HasSuffix(s, "/")):
		return field.ErrorList{field.Invalid(fldPath, s, "must be a URL prefix without query, fragment or trailing /: the install script appends /<version>/<file>")}
	}
	return nil
}

func checksumPathErrors(p string, fldPath *field.Path) field.ErrorList {
	switch {
	case !path.IsAbs(p) || path.Clean(p) != p:
		return field.ErrorList{field.Invalid(fldPath, p, "must be an absolute, clean path such as /usr/local/bin/k3s")}
	case !checksumPathChars.MatchString(p):
		return field.ErrorList{field.Invalid(fldPath, p, "must be a path of letters, digits and . _ / + @ - only: it reaches a shell command line")}
	}
	return nil
}

// verifying says whether the install needs a verification entry.
func verifying(ac *bootstrapv1.KThreesAgentConfig) bool {
	return ac.InstallScriptSHA256 != "" || (ac.AirGapped && len(ac.AirGappedChecksums) > 0)
}

// verifyCommand is the runcmd entry before the install: download the script to
// scriptPath when online (scriptURL != ""), then check each checksum.
func verifyCommand(ac *bootstrapv1.KThreesAgentConfig, scriptURL, scriptPath string) string {
	lines := []string{verifyHeader}
	if scriptURL != "" {
		lines = append(lines, fmt.Sprintf("mkdir -p %s && curl -sfL %s -o %s || %s",
			shellQuote(path.Dir(scriptPath)), shellQuote(scriptURL), shellQuote(scriptPath),
			failInline("could not download the k3s install script from "+scriptURL)))
	}
	if ac.InstallScriptSHA256 != "" {
		lines = append(lines, checksumLine(scriptPath, ac.InstallScriptSHA256, "the k3s install script"))
	}
	if ac.AirGapped {
		for _, c := range ac.AirGappedChecksums {
			lines = append(lines, checksumLine(c.Path, c.SHA256, "air-gapped file"))
		}
	}
	return strings.Join(lines, "\n")
}

// checksumLine checks one file with sha256sum -c, which GNU coreutils and busybox
// both read from stdin; a missing file fails it too.
func checksumLine(file, sum, what string) string {
	return fmt.Sprintf("echo %s | sha256sum -c - >/dev/null 2>&1 || %s",
		shellQuote(sum+"  "+file), failInline(fmt.Sprintf("%s %s is missing or does not have sha256 %s", what, file, sum)))
}

// failInline reports msg the way the file check's capk3s_fail does and stops the
// script.
func failInline(msg string) string {
	return fmt.Sprintf("{ echo %s >&2; mkdir -p %s && echo %s > %s; exit 1; }",
		shellQuote("capk3s: bootstrap failed: "+msg+"; k3s is not installed"), sentinelDir, shellQuote(msg), FailureMarkerPath)
}
