package minisystemd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// ParseEnvFile parses an EnvironmentFile=: KEY=VALUE lines, blank lines and
// lines starting with # or ; ignored. A value may be wrapped in single quotes
// (taken literally) or double quotes (backslash escapes \" \\ \$ \`); an
// unquoted value is trimmed and its backslashes escape the next character.
// A line ending in a backslash continues on the next line. The result keeps
// the file's order (later assignments win when applied).
func ParseEnvFile(text string) ([]string, error) {
	var out []string
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		for strings.HasSuffix(line, "\\") && !strings.HasSuffix(line, "\\\\") && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + strings.TrimSpace(lines[i])
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: %q is not KEY=VALUE", i+1, line)
		}
		key = strings.TrimSpace(key)
		if !isVarName(key) {
			return nil, fmt.Errorf("line %d: invalid variable name %q", i+1, key)
		}
		v, err := envValue(strings.TrimSpace(value))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		out = append(out, key+"="+v)
	}
	return out, nil
}

// envValue unquotes a value the way a shell would read it, which is also
// how systemd reads it: unquoted, single-quoted and double-quoted pieces
// concatenate (install.sh writes the output of `export`, where a value
// holding a ' comes out as 'it'"'"'s'). Unquoted trailing whitespace is
// dropped.
func envValue(v string) (string, error) {
	var b strings.Builder
	keep := 0 // length of b that trailing-whitespace trimming must not cut
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\'':
			end := strings.IndexByte(v[i+1:], '\'')
			if end < 0 {
				return "", fmt.Errorf("unterminated single quote in %q", v)
			}
			b.WriteString(v[i+1 : i+1+end])
			i += 1 + end
			keep = b.Len()
		case '"':
			closed := false
			for i++; i < len(v); i++ {
				if v[i] == '"' {
					closed = true
					break
				}
				if v[i] == '\\' && i+1 < len(v) && strings.IndexByte("\"\\$`", v[i+1]) >= 0 {
					i++
				}
				b.WriteByte(v[i])
			}
			if !closed {
				return "", fmt.Errorf("unterminated double quote in %q", v)
			}
			keep = b.Len()
		case '\\':
			if i+1 < len(v) {
				i++
				b.WriteByte(v[i])
				keep = b.Len()
			}
		default:
			b.WriteByte(c)
			if c != ' ' && c != '\t' {
				keep = b.Len()
			}
		}
	}
	return b.String()[:keep], nil
}

// serviceEnv builds a service's environment: the fixed base systemd gives a
// system service, then Environment=, then the EnvironmentFile= files in order
// (files override Environment=, as systemd documents). It is read at every
// start, so an edited k3s.service.env takes effect on the next restart
// without daemon-reload, as with systemd.
func serviceEnv(u *Unit) (map[string]string, []string, error) {
	env := map[string]string{}
	var order []string
	set := func(kv string) {
		k, v, _ := strings.Cut(kv, "=")
		if _, seen := env[k]; !seen {
			order = append(order, k)
		}
		env[k] = v
	}
	set("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	set("HOME=/root")
	for _, kv := range u.Environment {
		set(kv)
	}
	for _, ref := range u.EnvironmentFiles {
		data, err := os.ReadFile(ref.Path)
		if err != nil {
			if ref.Optional && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, nil, fmt.Errorf("environment file: %w", err)
		}
		kvs, err := ParseEnvFile(string(data))
		if err != nil {
			return nil, nil, fmt.Errorf("environment file %s: %w", ref.Path, err)
		}
		for _, kv := range kvs {
			set(kv)
		}
	}
	list := make([]string, 0, len(order))
	for _, k := range order {
		list = append(list, k+"="+env[k])
	}
	return env, list, nil
}
