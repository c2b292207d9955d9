package cloudinit

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"strconv"
	"strings"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// cloud-init runs each module on its own: a write_files entry it cannot write,
// or a user useradd refuses, fails that module and the boot goes on, so the
// runcmd script would still install k3s and write the bootstrap-success
// sentinel, and Cluster API would call the machine bootstrapped with files or
// accounts missing. So, right after the chowns of numeric owners (whose result
// it checks too) and before the user's first command, one runcmd entry checks
// what capk3s asked for: each file with its owner, mode and content digest, each
// user with its primary group and groups. On the first mismatch it says what is
// wrong on stderr (cloud-init's output log and the console), writes it to
// FailureMarkerPath and exits the runcmd script non-zero: k3s is not installed,
// no sentinel is written (the machine never reports bootstrapped) and cloud-init
// reports the boot as failed (scripts_user). It checks the result rather than
// cloud-init's recorded errors: those differ between cloud-init releases, and a
// module an image's vendor configured may fail for reasons of its own.
//
// Ignition needs no such check: it writes every file and creates every user
// before the system starts, and fails the boot on any it cannot.

// FailureMarkerPath is where a machine whose bootstrap data was not applied
// says why (cloud-config only; a failed Ignition boot stops in the initramfs).
const FailureMarkerPath = sentinelDir + "/bootstrap-failed"

// checkHeader starts the check entry, so that it can be found in runcmd.
const checkHeader = "# capk3s: stop unless cloud-init applied the files and users as asked"

// checkFunctions are sh functions the check lines call. stat -c and sha256sum
// are in GNU coreutils and busybox alike.
var checkFunctions = strings.Join([]string{
	`capk3s_fail() { echo "capk3s: bootstrap failed: $*; k3s is not installed" >&2; mkdir -p ` + sentinelDir + ` && echo "$*" > ` + FailureMarkerPath + `; exit 1; }`,
	// file path stat-format want sha256 ("" = not checked)
	`capk3s_file() { [ -f "$1" ] || capk3s_fail "file $1 was not written"; got=$(stat -c "$2" "$1"); [ "$got" = "$3" ] || capk3s_fail "file $1 is $got, not $3"; [ -z "$4" ] || [ "$(sha256sum < "$1" | cut -d' ' -f1)" = "$4" ] || capk3s_fail "file $1 does not hold the content asked for"; }`,
	// user name primary-group ("" = not checked)
	`capk3s_user() { id -u "$1" >/dev/null 2>&1 || capk3s_fail "user $1 was not created"; [ -z "$2" ] || [ "$(id -gn "$1")" = "$2" ] || capk3s_fail "user $1 does not have primary group $2"; }`,
	// group user group
	`capk3s_group() { id -nG "$1" | tr ' ' '\n' | grep -qxF -- "$2" || capk3s_fail "user $1 is not in group $2"; }`,
}, "\n")

// checkCommand is the runcmd entry that checks files (as the plan has them,
// owners before any rewriting) and users.
func checkCommand(files []File, users []user) string {
	lines := []string{checkHeader, checkFunctions}
	for _, f := range files {
		format, want := statExpectation(f)
		lines = append(lines, strings.Join([]string{"capk3s_file", shellQuote(f.Path), shellQuote(format), shellQuote(want), shellQuote(contentDigest(f))}, " "))
	}
	for _, u := range users {
		lines = append(lines, "capk3s_user "+shellQuote(u.Name)+" "+shellQuote(strings.TrimSpace(u.PrimaryGroup)))
		for _, g := range splitGroups(u.Groups) {
			lines = append(lines, "capk3s_group "+shellQuote(u.Name)+" "+shellQuote(g))
		}
	}
	return strings.Join(lines, "\n")
}

// statExpectation is a stat -c format and what it must print: the owner parts
// the file's owner sets (names by name, IDs by ID) and the mode.
func statExpectation(f File) (format, want string) {
	var formats, wants []string
	user, group := ownerParts(f.Owner)
	for _, p := range []struct{ v, byName, byID string }{{user, "%U", "%u"}, {group, "%G", "%g"}} {
		switch {
		case p.v == "":
		case numericID(p.v):
			// stat prints IDs without leading zeros.
			id, _ := strconv.ParseUint(p.v, 10, 32)
			formats, wants = append(formats, p.byID), append(wants, strconv.FormatUint(id, 10))
		default:
			formats, wants = append(formats, p.byName), append(wants, p.v)
		}
	}
	// fileSet.add accepted only octal modes.
	mode, _ := strconv.ParseUint(f.Permissions, 8, 32)
	return strings.Join(append(formats, "%a"), " "), strings.Join(append(wants, strconv.FormatUint(mode, 8)), " ")
}

// contentDigest is the sha256 of the bytes the file must hold once cloud-init
// has decoded it, or "" when the declared encoding does not decode (cloud-init
// then fails to write the file, which the check finds anyway).
func contentDigest(f File) string {
	b := []byte(f.Content)
	var err error
	if f.Encoding == bootstrapv1.Base64 || f.Encoding == bootstrapv1.GzipBase64 {
		if b, err = base64.StdEncoding.DecodeString(f.Content); err != nil {
			return ""
		}
	}
	if f.Encoding == bootstrapv1.Gzip || f.Encoding == bootstrapv1.GzipBase64 {
		r, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return ""
		}
		if b, err = io.ReadAll(r); err != nil {
			return ""
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func splitGroups(s string) []string {
	var out []string
	for g := range strings.SplitSeq(s, ",") {
		if g = strings.TrimSpace(g); g != "" {
			out = append(out, g)
		}
	}
	return out
}

// primaryGroups are the groups to create before the users: cloud-init creates
// a user's missing groups only when the user lists groups, and otherwise
// passes primary_group to useradd --gid, which fails on a group that does not
// exist (distros.create_user, cloud-init 22.4 and 25.1). A group listed in the
// top-level groups key is created first, and an existing one is left alone.
func primaryGroups(users []user) []string {
	var out []string
	seen := map[string]bool{}
	for _, u := range users {
		if g := strings.TrimSpace(u.PrimaryGroup); g != "" && !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	return out
}
