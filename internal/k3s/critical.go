package k3s

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// criticalOption is a k3s server option every server of an embedded-etcd cluster must
// share, and how its config value is read.
type criticalOption struct {
	name string
	// def is the value k3s uses when the key is absent ("" when k3s computes it
	// from other settings or the node, e.g. the CIDRs from the node's IP family).
	def string
	// boolean options read "true"/"false"; an absent key is false.
	boolean bool
	// member, for the disable list, is the entry that sets the critical value.
	member string
}

// criticalOptions are k3s's CriticalControlArgs (pkg/daemons/config/types.go) by the
// option that sets each (pkg/cli/server/server.go, run()), with the defaults their
// flags declare (pkg/cli/cmds/server.go). Read at the upstream commits of v1.34.9,
// v1.35.4 and v1.36.2, where all three files agree. A joining server of an
// embedded-etcd cluster asks the server it joins for its configuration and stops with
// "critical configuration value mismatch between servers" when any of these differ
// (pkg/cluster/bootstrap.go, compareConfig); servers on an external datastore are
// never compared (they bootstrap from the datastore). Of the disable list only
// "servicelb" is critical (DisableServiceLB); traefik, local-storage, metrics-server,
// coredns and runtimes are not. disable-helm-controller and disable-network-policy are
// options of their own, not disable entries.
var criticalOptions = []criticalOption{
	{name: "cluster-cidr"},
	{name: "service-cidr"},
	{name: "cluster-dns"},
	{name: "cluster-domain", def: "cluster.local"},
	{name: "disable", member: "servicelb"},
	{name: "disable-cloud-controller", boolean: true},
	{name: "disable-helm-controller", boolean: true},
	{name: "disable-network-policy", boolean: true},
	{name: "secrets-encryption", boolean: true},
	{name: "secrets-encryption-provider", def: "aescbc"},
	{name: "embedded-registry", boolean: true},
	{name: "flannel-backend", def: "vxlan"},
	{name: "flannel-ipv6-masq", boolean: true},
	{name: "flannel-external-ip", boolean: true},
	{name: "egress-selector-mode", def: "agent"},
	{name: "supervisor-metrics", boolean: true},
}

// CriticalChange is a critical option whose value differs between two servers'
// options.
type CriticalChange struct {
	// Option is the k3s option; for the disable list "disable servicelb".
	Option string
	// Old and New are the values as k3s reads them, defaults applied.
	Old, New string
}

func (c CriticalChange) String() string {
	return fmt.Sprintf("%s (%s, now %s)", c.Option, c.Old, c.New)
}

// CriticalChanges lists, in criticalOptions' order, the critical options whose values
// differ between two servers' k3s options (config.yaml keys to values, as the
// renderer writes them). An absent key equals k3s's default spelled out; the CIDRs
// and cluster-dns, which k3s derives from the node, compare as written.
func CriticalChanges(old, updated map[string]any) []CriticalChange {
	var out []CriticalChange
	for _, o := range criticalOptions {
		before, after := o.value(old), o.value(updated)
		if before != after {
			name := o.name
			if o.member != "" {
				name += " " + o.member
			}
			out = append(out, CriticalChange{Option: name, Old: before, New: after})
		}
	}
	return out
}

// IsCriticalOption says whether k3s compares the option (a config key; a trailing
// "+" is ignored) between the servers of an embedded-etcd cluster.
func IsCriticalOption(key string) bool {
	key = OptionName(key)
	for _, o := range criticalOptions {
		if o.name == key {
			return true
		}
	}
	return false
}

// value is the option's value as k3s reads it: the key and its "+" form (which
// appends) together, lists split on commas as k3s's list flags do.
func (o criticalOption) value(options map[string]any) string {
	var entries []string
	for _, key := range []string{o.name, o.name + "+"} {
		entries = append(entries, configEntries(options[key])...)
	}
	switch {
	case o.member != "":
		for _, e := range entries {
			if e == o.member {
				return "true"
			}
		}
		return "false"
	case o.boolean:
		if len(entries) == 0 {
			return "false"
		}
		// The last value given wins, as for any repeated flag.
		if b, err := strconv.ParseBool(entries[len(entries)-1]); err == nil {
			return strconv.FormatBool(b)
		}
		return entries[len(entries)-1]
	case len(entries) == 0:
		return o.def
	}
	return strings.Join(entries, ",")
}

// configEntries are a config value's entries as strings: a list's elements, a
// scalar as one, each split on commas and trimmed.
func configEntries(v any) []string {
	var raw []string
	switch v := v.(type) {
	case nil:
	case []string:
		raw = v
	case []any:
		for _, e := range v {
			raw = append(raw, fmt.Sprint(e))
		}
	case json.Number:
		raw = []string{v.String()}
	default:
		raw = []string{fmt.Sprint(v)}
	}
	var out []string
	for _, r := range raw {
		for _, s := range strings.Split(r, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}
