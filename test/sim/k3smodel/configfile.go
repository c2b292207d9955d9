package k3smodel

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v2"
)

// How k3s reads its config file, from pkg/configfilearg (parser.go, defaultparser.go)
// of v1.34.9, v1.35.4 and v1.36.2 (identical in the three), and what the CLI parser,
// urfave/cli v2.27.7 over Go's flag package (k3s's go.mod in the three minors), then
// does with the result:
//
//   - config.yaml, then the drop-ins config.yaml.d/*.yaml in name order, are read as
//     YAML maps (gopkg.in/yaml.v2 MapSlice). A key ending in "+" appends its value to
//     what an earlier file set; any other key replaces it (readConfigFile).
//   - Every key becomes "--key=value" ("-k=value" for a one-letter key), one per list
//     element; a scalar is written with wrangler's convert.ToString (fmt.Sprint; null
//     is the empty string). The flags go right after the subcommand, before the real
//     command line (Parse).
//   - Only `k3s server` (and etcd-snapshot) has ValidFlags: a key that is not one of the
//     server's flags (name or alias) is logged "Unknown flag ... found in config.yaml,
//     skipping" and dropped (stripInvalidFlags). `k3s agent` has none, so every key
//     reaches the CLI parser, which fails on an unknown one ("flag provided but not
//     defined"), and MustParse/app.Run end the process.
//   - The CLI parser converts each value to the flag's type: Bool with
//     strconv.ParseBool, Int with strconv.ParseInt (base 0), Duration with
//     time.ParseDuration; String and StringSlice take any text. A value that does not
//     convert is fatal on both subcommands ("invalid value ... for flag").

// ExitError is k3s refusing to start: the process exits, the machine never joins.
type ExitError struct {
	Role   string
	Reason string
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("k3s %s exited: %s", e.Role, e.Reason)
}

// Config is the k3s config a subcommand ends up with after reading its config files.
type Config struct {
	// Values are the values each flag received, by the flag's name (an alias key is
	// filed under the name), in the order the parser saw them.
	Values map[string][]string
	// Dropped are the keys `k3s server` warned about and skipped, sorted.
	Dropped []string
}

// Set says whether a key set the flag.
func (c Config) Set(name string) bool {
	return len(c.Values[name]) > 0
}

// Last is the flag's value as a scalar flag holds it: the last one given.
func (c Config) Last(name string) string {
	v := c.Values[name]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// Bool is a bool flag's value (false when unset; the values were checked on reading).
func (c Config) Bool(name string) bool {
	b, _ := strconv.ParseBool(c.Last(name))
	return b
}

// ReadConfig reads config files (config.yaml first, then its drop-ins in name order)
// as role's k3s of the minor does. A YAML error, an agent's unknown key and a value
// its flag cannot take are an *ExitError.
func ReadConfig(minor Minor, role string, files ...[]byte) (Config, error) {
	args, err := configArgs(role, files)
	if err != nil {
		return Config{}, err
	}
	cfg := Config{Values: map[string][]string{}}
	for _, a := range args {
		f, ok := flagFor(minor.Number, role, a.key)
		if !ok {
			if role == RoleServer {
				cfg.Dropped = append(cfg.Dropped, a.key)
				continue
			}
			return Config{}, &ExitError{Role: role, Reason: "flag provided but not defined: -" + a.key}
		}
		if err := parseAs(f.Type, a.value); err != nil {
			return Config{}, &ExitError{Role: role, Reason: fmt.Sprintf("invalid value %q for flag -%s: %v", a.value, a.key, err)}
		}
		cfg.Values[f.Name] = append(cfg.Values[f.Name], a.value)
	}
	sort.Strings(cfg.Dropped)
	cfg.Dropped = dedupe(cfg.Dropped)
	return cfg, nil
}

type arg struct{ key, value string }

// configArgs flattens the files into the flags k3s's config reader produces.
func configArgs(role string, files [][]byte) ([]arg, error) {
	var order []string
	values := map[string]any{}
	for _, raw := range files {
		var data yaml.MapSlice
		if err := yaml.Unmarshal(raw, &data); err != nil {
			return nil, &ExitError{Role: role, Reason: "config file: " + err.Error()}
		}
		for _, item := range data {
			k := toString(item.Key)
			k, appending := strings.CutSuffix(k, "+")
			old, seen := values[k]
			if !seen {
				order = append(order, k)
			}
			if seen && appending {
				values[k] = append(toSlice(old), toSlice(item.Value)...)
			} else {
				values[k] = item.Value
			}
		}
	}
	var out []arg
	for _, k := range order {
		if list, ok := values[k].([]any); ok {
			for _, v := range list {
				out = append(out, arg{k, toString(v)})
			}
			continue
		}
		out = append(out, arg{k, toString(values[k])})
	}
	return out, nil
}

// toString writes a YAML value as wrangler's convert.ToString does for the values a
// config file holds: nil is empty, anything else is printed with fmt.Sprint.
func toString(v any) string {
	if v == nil || !reflect.ValueOf(v).IsValid() {
		return ""
	}
	if t, ok := v.(time.Time); ok {
		return t.Format(time.RFC3339)
	}
	return fmt.Sprint(v)
}

// toSlice is configfilearg's toSlice: a list stays, a blank scalar is no element.
func toSlice(v any) []any {
	switch v := v.(type) {
	case string:
		return []any{v}
	case []any:
		return v
	}
	if s := strings.TrimSpace(toString(v)); s != "" {
		return []any{s}
	}
	return nil
}

// parseAs converts a value as Go's flag package does for the urfave/cli flag kind.
func parseAs(kind, value string) error {
	var err error
	switch kind {
	case "Bool":
		_, err = strconv.ParseBool(value)
	case "Int":
		_, err = strconv.ParseInt(value, 0, strconv.IntSize)
	case "Duration":
		_, err = time.ParseDuration(value)
	case "String", "StringSlice":
	default:
		// A kind the extraction found that these rules do not know: say so rather
		// than guess.
		return fmt.Errorf("the simulator has no rule for urfave/cli %sFlag values", kind)
	}
	if err != nil {
		return fmt.Errorf("parse error")
	}
	return nil
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
