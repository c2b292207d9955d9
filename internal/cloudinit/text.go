package cloudinit

import "unicode/utf8"

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
