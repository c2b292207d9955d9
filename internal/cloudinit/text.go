package cloudinit

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

const notCarriable = "must be UTF-8 text without NUL, DEL, C1 control characters, U+2028, U+2029, U+FFFE or U+FFFF"

// carriable reports whether s, used as a YAML string (a command, a path, an
// owner), reaches the machine unchanged. sigs.k8s.io/yaml goes through JSON:
// encoding/json silently replaces invalid UTF-8, and it leaves DEL, C1 controls
// and U+FFFE/U+FFFF unescaped, which the YAML reader then refuses; and the YAML
// emitter may write NEL, LS and PS raw in a quoted scalar, where the reader
// folds them into a space. Other control characters are fine because they are
// escaped. NUL is refused for sh's sake.
func carriable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r == 0 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0x2028 || r == 0x2029 || r == 0xfffe || r == 0xffff {
			return false
		}
	}
	return true
}

// yamlSafe reports whether file content can be written as plain text and come
// back byte for byte in every scalar style: YAML's printable characters, minus
// those that YAML treats as line breaks ("\r", NEL, LS, PS: parsers normalise them
// to "\n") or as a byte-order mark. Anything else is carried base64 encoded.
func yamlSafe(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n':
		case r >= 0x20 && r <= 0x7e:
		case r >= 0xa0 && r <= 0xd7ff && r != 0x2028 && r != 0x2029:
		case r >= 0xe000 && r <= 0xfffd && r != 0xfeff:
		case r >= 0x10000 && r <= 0x10ffff:
		default:
			return false
		}
	}
	return true
}

// yaml11Typed matches the plain scalars that a YAML 1.1 reader resolves to
// something other than a string (bool, int, float, null, timestamp, merge key,
// value key). cloud-init reads the document with PyYAML, which is YAML 1.1, while
// the Go emitter decides on quoting with its own, narrower rules: it writes "=",
// "<<" or a hexadecimal number too big for int64 unquoted, and PyYAML then sees a
// number or fails on the whole document.
var yaml11Typed = regexp.MustCompile(`^(?:` + strings.Join([]string{
	`y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF`,
	`[-+]?0b[01_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+`,
	`[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?\.[0-9][0-9_]*(?:[eE][-+]?[0-9]+)?`,
	`[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)`,
	`~|null|Null|NULL|<<|=|`,
	`[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)?`,
}, "|") + `)$`)

// misreadByYAML11 reports whether cloud-init would not get s back as the string
// s. Asking the emitter itself whether it quotes s keeps this exact: "true" is
// quoted, so it is a fine command, while "=" is not.
func misreadByYAML11(s string) bool {
	if !yaml11Typed.MatchString(s) {
		return false
	}
	out, err := yaml.Marshal(s)
	if err != nil || len(out) == 0 {
		return true
	}
	return !strings.ContainsRune(`'"|>`, rune(out[0]))
}
