package sim

import (
	"fmt"
	"strings"
)

// cloud-init's write_files sets owners by name (getpwnam, getgrnam) as it
// writes, in its init stage; users_groups runs later in that stage, and
// write_files_deferred (entries with defer: true) in the final stage, before
// scripts_user runs the runcmd script. So an entry that is not deferred can
// only be owned by accounts the image already has, and no entry can be owned
// by an ID: cloud-init looks "1000" up as a name. Either way write_files fails
// (on 22.4 with every later entry) and the file is not written as asked.

// cloudInitAccounts are the user and group names users_groups creates: each
// user, the group useradd names after it, its primary_group, and its groups
// (cloud-init creates the missing ones). users entries are a bare name or a map;
// groups a comma-separated string or a list.
func cloudInitAccounts(users []any) map[string]bool {
	names := map[string]bool{}
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			names[s] = true
		}
	}
	for _, u := range users {
		switch u := u.(type) {
		case string:
			add(u)
		case map[string]any:
			for _, k := range []string{"name", "primary_group"} {
				if s, ok := u[k].(string); ok {
					add(s)
				}
			}
			switch g := u["groups"].(type) {
			case string:
				for _, s := range strings.Split(g, ",") {
					add(s)
				}
			case []any:
				for _, s := range g {
					add(fmt.Sprint(s))
				}
			}
		}
	}
	return names
}

// checkFileOwner fails an entry whose owner write_files cannot set.
func checkFileOwner(f cloudInitFile, created map[string]bool) error {
	user, group, _ := strings.Cut(f.Owner, ":")
	for _, name := range []string{user, group} {
		// cloud-init trims, and leaves "", "-1" and "none" as they are.
		name = strings.TrimSpace(name)
		if name == "" || name == "-1" || strings.EqualFold(name, "none") {
			continue
		}
		if isDigits(name) {
			return fmt.Errorf("write_files %s: owner %q: cloud-init looks owners up by name and finds no %q", f.Path, f.Owner, name)
		}
		if created[name] && !f.Defer && name != "root" {
			return fmt.Errorf("write_files %s: owner %q: %s is created by users, after write_files runs (defer: true would write the file after users)", f.Path, f.Owner, name)
		}
	}
	return nil
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
