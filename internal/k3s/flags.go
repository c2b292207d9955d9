package k3s

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"
)

// The roles whose options the table knows: k3s's two subcommands that read config.yaml.
const (
	RoleServer = "server"
	RoleAgent  = "agent"
)

// k3sFlag is one row of flags_generated.go, the flags of `k3s server` and `k3s agent`
// read mechanically from k3s's pkg/cli/cmds at one upstream commit per supported minor
// (hack/k3sflags; make k3s-flags). Type is the urfave/cli flag kind; Server and Agent
// are the minors whose subcommand has the flag.
type k3sFlag struct {
	Name    string
	Aliases []string
	Type    string
	Hidden  bool
	Server  []int
	Agent   []int
}

// SupportedMinors are the k3s minors (v1.<n>) capk3s knows the options of, oldest first.
func SupportedMinors() []int {
	return slices.Sorted(maps.Keys(k3sFlagsRead))
}

// OptionMinors are the minors whose option tables apply to a k3s version: the version's
// own minor when it is supported, the nearest supported minor otherwise (outside is
// true then), and every supported minor for no version, since the machine may install
// any of them.
func OptionMinors(version string) (minors []int, outside bool, err error) {
	all := SupportedMinors()
	if version == "" {
		return all, false, nil
	}
	v, err := ParseVersion(version)
	if err != nil {
		return nil, false, err
	}
	m := int(v.Minor)
	if v.Major != 1 {
		return nil, false, fmt.Errorf("%q is not a k3s v1 version", version)
	}
	switch {
	case m < all[0]:
		return all[:1], true, nil
	case m > all[len(all)-1]:
		return all[len(all)-1:], true, nil
	case !slices.Contains(all, m):
		return nil, false, fmt.Errorf("no option table for k3s v1.%d", m)
	}
	return []int{m}, false, nil
}

// SupportedRange names the supported minors for messages: "v1.34-v1.36".
func SupportedRange() string {
	all := SupportedMinors()
	return fmt.Sprintf("v1.%d-v1.%d", all[0], all[len(all)-1])
}

// flagFor finds the flag role's k3s of minor has for key (its name or an alias).
func flagFor(minor int, role, key string) (k3sFlag, bool) {
	name := OptionName(key)
	for _, f := range k3sFlags {
		if f.Name != name && !slices.Contains(f.Aliases, name) {
			continue
		}
		in := f.Agent
		if role == RoleServer {
			in = f.Server
		}
		if slices.Contains(in, minor) {
			return f, true
		}
	}
	return k3sFlag{}, false
}

// KnownOption says whether role's k3s takes key in every one of minors.
func KnownOption(minors []int, role, key string) bool {
	for _, m := range minors {
		if _, ok := flagFor(m, role, key); !ok {
			return false
		}
	}
	return len(minors) > 0
}

// MissingIn are those of minors whose role's k3s lacks key, as "v1.N".
func MissingIn(minors []int, role, key string) []string {
	var out []string
	for _, m := range minors {
		if _, ok := flagFor(m, role, key); !ok {
			out = append(out, fmt.Sprintf("v1.%d", m))
		}
	}
	return out
}

// ServerOnlyOption says whether key is an option servers take and agents do not, in
// some supported minor.
func ServerOnlyOption(key string) bool {
	for _, m := range SupportedMinors() {
		_, server := flagFor(m, RoleServer, key)
		_, agent := flagFor(m, RoleAgent, key)
		if server && !agent {
			return true
		}
	}
	return false
}

// CheckOptionType checks a decoded option value (see OptionValue) against the type of
// role's flag key in each of minors, as k3s's CLI parser converts it: k3s writes every
// config value (each element of a list) as text and refuses to start when the flag
// cannot take it. The message never quotes the value: options may hold secrets.
func CheckOptionType(minors []int, role, key string, v any) error {
	for _, m := range minors {
		f, ok := flagFor(m, role, key)
		if !ok {
			continue
		}
		for _, s := range OptionTexts(v) {
			if err := parseFlagValue(f.Type, s); err != nil {
				return fmt.Errorf("k3s v1.%d's %s takes %w; the value given is not one, and k3s would not start", m, f.Name, err)
			}
		}
	}
	return nil
}

// OptionTexts is the text k3s's config reader hands to the flag parser for a decoded
// value: one string per list element, bools as true/false, numbers as written.
func OptionTexts(v any) []string {
	switch v := v.(type) {
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, OptionTexts(e)...)
		}
		return out
	case bool:
		return []string{strconv.FormatBool(v)}
	default:
		return []string{fmt.Sprint(v)}
	}
}

// parseFlagValue converts as Go's flag package does for the urfave/cli kinds k3s uses,
// and names the kind wanted when the text does not convert.
func parseFlagValue(kind, s string) error {
	var err error
	var want string
	switch kind {
	case "Bool":
		_, err = strconv.ParseBool(s)
		want = "a bool (true or false)"
	case "Int":
		_, err = strconv.ParseInt(s, 0, 64)
		want = "a whole number"
	case "Duration":
		_, err = time.ParseDuration(s)
		want = "a duration such as 10m or 1h30m"
	}
	if err != nil {
		return errors.New(want)
	}
	return nil
}

// AliasOf is the option a short alias stands for ("s" for server), or "" when key is
// no alias. extraConfig must use full names: the managed options are known by them.
func AliasOf(key string) string {
	name := OptionName(key)
	for _, f := range k3sFlags {
		if slices.Contains(f.Aliases, name) {
			return f.Name
		}
	}
	return ""
}
