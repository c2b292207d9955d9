package minisystemd

import (
	"fmt"
	"strings"
)

// SplitWords splits a command line the way systemd splits Exec*= values in
// the simple cases: words are separated by whitespace, single and double
// quotes group words (and are removed), and backslash escapes are C-style.
func SplitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("trailing backslash in %q", s)
			}
			i++
			cur.WriteByte(unescape(s[i]))
			inWord = true
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote = c
			inWord = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unbalanced quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

func unescape(c byte) byte {
	switch c {
	case 'a':
		return '\a'
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'v':
		return '\v'
	case 's':
		return ' '
	}
	return c
}

// expandCommand substitutes environment variables in command words as
// systemd does: "${VAR}" inside a word is replaced by the value, a word that
// is exactly "$VAR" becomes the value split at whitespace, "$$" is a "$".
func expandCommand(argv []string, env map[string]string) []string {
	var out []string
	for i, w := range argv {
		if i > 0 && len(w) > 1 && w[0] == '$' && isVarName(w[1:]) {
			out = append(out, strings.Fields(env[w[1:]])...)
			continue
		}
		out = append(out, expandBraced(w, env))
	}
	return out
}

func expandBraced(w string, env map[string]string) string {
	if !strings.Contains(w, "$") {
		return w
	}
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		if w[i] != '$' || i+1 >= len(w) {
			b.WriteByte(w[i])
			continue
		}
		switch w[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '{':
			end := strings.IndexByte(w[i+2:], '}')
			if end < 0 || !isVarName(w[i+2:i+2+end]) {
				b.WriteByte('$')
				continue
			}
			b.WriteString(env[w[i+2:i+2+end]])
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func isVarName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}
