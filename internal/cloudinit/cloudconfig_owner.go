package cloudinit

import (
	"strconv"
	"strings"
)

// cloud-init's write_files module sets a file's owner by name (getpwnam and
// getgrnam) as it writes the file, in its first stage, before users_groups has
// created spec.users. An owner it cannot resolve fails the module: on 25.1 the
// file is missing, on 22.4 it stays root's and every later entry is skipped. A
// numeric owner never resolves, since "1000" is looked up as a name. So:
//
//   - a file owned by a user or group that spec.users creates is written with
//     defer: true, which cloud-init writes in its final stage
//     (write_files_deferred), after users_groups and before scripts_user runs
//     the runcmd script;
//   - a file with a numeric owner (part) is written root:root and given its
//     owner by a chown at the head of runcmd, before the user's first command;
//     a chown that fails stops the script, so k3s is not installed on a machine
//     whose files are not as asked;
//   - any other owner (root, or an account the image already has) is left to
//     write_files, so the file is there as early as before.
//
// Ignition needs none of this: it creates passwd users before writing files and
// takes IDs as they are.

// ownerParts splits "user[:group]" as cloud-init does: surrounding blanks are
// dropped, and a part that is empty, "-1" or "none" leaves that ID as the writer
// (root) has it.
func ownerParts(owner string) (user, group string) {
	user, group, _ = strings.Cut(owner, ":")
	unset := func(s string) string {
		s = strings.TrimSpace(s)
		if s == "-1" || strings.EqualFold(s, "none") {
			return ""
		}
		return s
	}
	return unset(user), unset(group)
}

func numericID(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// createdAccounts are the user and group names cloud-init's users_groups
// creates for spec.users: each user, the group useradd names after it, its
// primary group and the supplementary groups (cloud-init creates those that do
// not exist).
func createdAccounts(users []user) map[string]bool {
	names := map[string]bool{}
	for _, u := range users {
		names[u.Name] = true
		if u.PrimaryGroup != "" {
			names[u.PrimaryGroup] = true
		}
		for g := range strings.SplitSeq(u.Groups, ",") {
			if g = strings.TrimSpace(g); g != "" {
				names[g] = true
			}
		}
	}
	return names
}

// cloudInitOwnership decides how w gets its owner: w's own owner, deferred or
// not, or root:root and the chown command that follows.
func cloudInitOwnership(w *writeFile, created map[string]bool) (chown string) {
	user, group := ownerParts(w.Owner)
	if numericID(user) || numericID(group) {
		spec := user
		if group != "" {
			spec += ":" + group
		}
		w.Owner = defaultOwner
		return "chown " + shellQuote(spec) + " " + shellQuote(w.Path) + " || exit 1"
	}
	// root exists before any stage, even if spec.users lists it.
	w.Defer = (user != "root" && created[user]) || (group != "root" && created[group])
	return ""
}

// specialModeChmod sets a setuid or setgid bit again after cloud-init: its
// write_files sets the mode first and the owner after, and Linux clears those
// bits on chown, also root's (seen with cloud-init 22.4 and 25.1, test/bootos).
// It runs after the chowns of numeric owners, which would clear them too, and a
// failure stops the runcmd script like a failed chown.
func specialModeChmod(f File) string {
	mode, err := strconv.ParseUint(f.Permissions, 8, 32)
	if err != nil || mode&0o6000 == 0 {
		return ""
	}
	return "chmod " + shellQuote(f.Permissions) + " " + shellQuote(f.Path) + " || exit 1"
}
