package cloudinit

import "strconv"

// ignitionSpecialModeChmods are the commands that give files their setuid, setgid
// and sticky bits on an Ignition machine. Spec 3.4 has no such bits for files, and
// Ignition (v2.24.0, config/v3_6_experimental/translate) masks them off when it
// reads an older spec, so a 4750 file would land 0750 (seen in test/bootos). They
// run first in the bootstrap script, before the user's commands, and a failure
// stops the script as a failed write would stop Ignition.
func ignitionSpecialModeChmods(files []File) []string {
	var out []string
	for _, f := range files {
		mode, err := strconv.ParseUint(f.Permissions, 8, 32)
		if err != nil || mode&0o7000 == 0 {
			continue
		}
		out = append(out, "chmod "+shellQuote(f.Permissions)+" "+shellQuote(f.Path)+" || exit 1")
	}
	return out
}
