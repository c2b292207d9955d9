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

func envValue(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	switch v[0] {
	case '\'':
		end := strings.IndexByte(v[1:], '\'')
		if end < 0 {
			return "", fmt.Errorf("unterminated single quote in %q", v)
		}
		return v[1 : 1+end], nil
	case '"':
		var b strings.Builder
		for i := 1; i < len(v); i++ {
			switch v[i] {
			case '"':
				return b.String(), nil
			case '\\':
				if i+1 < len(v) && strings.IndexByte("\"\\$`", v[i+1]) >= 0 {
					i++
				}
			}
			b.WriteByte(v[i])
		}
		return "", fmt.Errorf("unterminated double quote in %q", v)
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String(), nil
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
