package sim

import (
	"fmt"
	"strings"
)

// debianGroups are the groups a Debian image has before cloud-init runs: those
// of base-passwd's group.master plus the ones systemd and chrony add, as read
// from /etc/group of debootstrapped bookworm and trixie roots (minbase with
// cloud-init, systemd, chrony). The simulated machine is such an image.
var debianGroups = strings.Fields(`root daemon bin sys adm tty disk lp mail news uucp man proxy kmem
	dialout fax voice cdrom floppy tape sudo audio dip www-data backup operator list irc src shadow
	utmp video sasl plugdev staff games users nogroup systemd-journal systemd-network _chrony`)

// checkPrimaryGroups plays cloud-init's users_groups: the top-level groups are
// created first, then each user in order. cloud-init creates a user's missing
// groups (and with them its primary_group) only when the user lists groups;
// otherwise primary_group goes to useradd --gid, which fails on a group that
// does not exist, and the user is not created (cloudinit/distros/__init__.py,
// create_user and add_user, cloud-init 22.4 and 25.1). useradd makes a group
// named after each user it creates (Debian's USERGROUPS_ENAB).
func checkPrimaryGroups(topLevel []any, users []any) error {
	exists := map[string]bool{}
	for _, g := range debianGroups {
		exists[g] = true
	}
	for _, g := range topLevel {
		// An entry is a name, or a map of a name to its members.
		switch g := g.(type) {
		case string:
			exists[strings.TrimSpace(g)] = true
		case map[string]any:
			for name := range g {
				exists[strings.TrimSpace(name)] = true
			}
		}
	}
	for _, u := range users {
		m, ok := u.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		primary, _ := m["primary_group"].(string)
		primary = strings.TrimSpace(primary)
		var groups []string
		switch g := m["groups"].(type) {
		case string:
			groups = strings.Split(g, ",")
		case []any:
			for _, s := range g {
				groups = append(groups, fmt.Sprint(s))
			}
		}
		if len(groups) > 0 {
			for _, g := range groups {
				exists[strings.TrimSpace(g)] = true
			}
			if primary != "" {
				exists[primary] = true
			}
		}
		if primary != "" && !exists[primary] {
			return fmt.Errorf("users %s: primary_group %q does not exist and cloud-init creates it only for a user with groups: useradd fails and the user is not created", name, primary)
		}
		exists[strings.TrimSpace(name)] = true
	}
	return nil
}
