package cloudinit

import "strings"

// shellQuote makes s a single POSIX sh word. Go's standard library has none because
// os/exec never goes through a shell; strconv.Quote is no substitute, since inside
// sh double quotes "$", "`" and "\" are still interpreted. Inside single quotes
// nothing is, so the only character to handle is the single quote itself, which
// is closed, escaped and reopened.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
