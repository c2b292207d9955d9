package k3smodel

import (
	"encoding/binary"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
)

// Critical holds a server's critical settings: the values k3s's CriticalControlArgs
// (pkg/daemons/config/types.go, identical in v1.34.9, v1.35.4 and v1.36.2) keeps, by
// the name k3s reports a mismatch under (the struct's `cli` tags). A joining server of
// an embedded-etcd cluster must hold the same values as the server it joins through,
// or k3s refuses it (pkg/cluster/bootstrap.go, compareConfig).
type Critical map[string]string

// JoinRefusedMessage is the error a joining k3s server stops with when its critical
// settings differ from the cluster's: compareConfig's error, wrapped by
// Cluster.bootstrap (pkg/cluster/bootstrap.go) and by control.prepare
// (pkg/daemons/control/server.go), the same in v1.34, v1.35 and v1.36.
const JoinRefusedMessage = "failed to bootstrap cluster data: failed to validate server configuration: critical configuration value mismatch between servers"

// boolCritical are the bool flags copied into CriticalControlArgs as they are
// (pkg/cli/server/server.go, run(): ControlConfig.X = cfg.X), by flag and cli tag,
// which are the same name. Their flags default to false (pkg/cli/cmds/server.go).
var boolCritical = []string{
	"disable-cloud-controller", "disable-helm-controller", "disable-network-policy",
	"secrets-encryption", "embedded-registry", "flannel-ipv6-masq",
	"flannel-external-ip", "supervisor-metrics",
}

// stringCritical are the string flags copied as they are, with the default each
// flag declares (pkg/cli/cmds/server.go, `Value:`), so that an absent key and the
// default spelled out are the same setting.
var stringCritical = map[string]string{
	"cluster-domain":              "cluster.local",
	"flannel-backend":             "vxlan",
	"egress-selector-mode":        "agent",
	"secrets-encryption-provider": "aescbc",
}

// CriticalOf computes a server's critical settings from its k3s options (config.yaml
// as k3s merged it: option name to the YAML value), as k3s v1.<minor> derives
// them. The rules are the same in every minor the model plays (v1.34, v1.35, v1.36:
// pkg/daemons/config/types.go, pkg/cli/server/server.go and pkg/cli/cmds/server.go
// read at the commits in Minors); minor is taken so that a minor where they differ
// has a place to say so.
//
// Derived values follow pkg/cli/server/server.go: cluster-cidr and service-cidr
// default to the IPv4 ranges (util.GetDefaultAddresses for an IPv4 node IP, which
// every simulated node has) and are kept as parsed networks; cluster-dns defaults to
// the tenth address of each service range; disable-service-lb is set by "servicelb"
// in the disable list (entries split on commas and trimmed).
func CriticalOf(minor Minor, options map[string]any) (Critical, error) {
	if minor.Number < Minors[0].Number || minor.Number > Minors[len(Minors)-1].Number {
		return nil, fmt.Errorf("no critical settings known for k3s v1.%d", minor.Number)
	}
	c := Critical{}
	for _, name := range boolCritical {
		v, err := boolOption(options, name)
		if err != nil {
			return nil, err
		}
		c[name] = strconv.FormatBool(v)
	}
	for name, def := range stringCritical {
		c[name] = stringOption(options, name, def)
	}
	disabled := false
	for _, d := range listOption(options, "disable") {
		disabled = disabled || strings.TrimSpace(d) == "servicelb"
	}
	c["disable-service-lb"] = strconv.FormatBool(disabled)

	clusterCIDR, err := networks(options, "cluster-cidr", "10.42.0.0/16")
	if err != nil {
		return nil, err
	}
	serviceCIDR, err := networks(options, "service-cidr", "10.43.0.0/16")
	if err != nil {
		return nil, err
	}
	dns, err := clusterDNS(options, serviceCIDR)
	if err != nil {
		return nil, err
	}
	c["cluster-cidr"], c["service-cidr"], c["cluster-dns"] = joinNets(clusterCIDR), joinNets(serviceCIDR), dns
	return c, nil
}

// Mismatched lists, sorted, the settings whose values differ between a joining
// server (c) and the server it joins through (cluster): what k3s logs as "critical
// configuration mismatched: <name>" before refusing the join.
func (c Critical) Mismatched(cluster Critical) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(cluster)) {
		if c[name] != cluster[name] {
			out = append(out, name)
		}
	}
	return out
}

// listOption is a string or list option's values as k3s's flags receive them: each
// config entry becomes one flag value, and StringSlice flags split on commas
// (util.SplitStringSlice). A key ending in "+" appends (pkg/configfilearg/parser.go).
func listOption(options map[string]any, name string) []string {
	var out []string
	for _, key := range []string{name, name + "+"} {
		switch v := options[key].(type) {
		case nil:
		case []any:
			for _, e := range v {
				out = append(out, strings.Split(fmt.Sprint(e), ",")...)
			}
		default:
			out = append(out, strings.Split(fmt.Sprint(v), ",")...)
		}
	}
	var trimmed []string
	for _, s := range out {
		if s = strings.TrimSpace(s); s != "" {
			trimmed = append(trimmed, s)
		}
	}
	return trimmed
}

// stringOption reads a string flag, or its default when the key is absent. A list
// gives the flag once per entry, and the last one set wins.
func stringOption(options map[string]any, name, def string) string {
	switch v := options[name].(type) {
	case nil:
		return def
	case []any:
		if len(v) == 0 {
			return def
		}
		return fmt.Sprint(v[len(v)-1])
	default:
		return fmt.Sprint(v)
	}
}

// boolOption reads a bool flag: YAML true/false, or a string the flag parses
// (urfave/cli uses strconv.ParseBool); anything else stops k3s.
func boolOption(options map[string]any, name string) (bool, error) {
	switch v := options[name].(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	case string:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("%s: %q is not a bool; k3s would not start", name, v)
		}
		return b, nil
	default:
		return false, fmt.Errorf("%s: %v is not a bool; k3s would not start", name, v)
	}
}

// networks parses a CIDR list option as k3s does (net.ParseCIDR, which keeps the
// network, not the address written), or its default.
func networks(options map[string]any, name, def string) ([]*net.IPNet, error) {
	values := listOption(options, name)
	if len(values) == 0 {
		values = []string{def}
	}
	var out []*net.IPNet
	for _, v := range values {
		_, n, err := net.ParseCIDR(v)
		if err != nil {
			return nil, fmt.Errorf("invalid %s %s; k3s would not start", name, v)
		}
		out = append(out, n)
	}
	return out, nil
}

func joinNets(nets []*net.IPNet) string {
	s := make([]string, len(nets))
	for i, n := range nets {
		s[i] = n.String()
	}
	return strings.Join(s, ",")
}

// clusterDNS is the cluster-dns option's addresses, or the tenth address of each
// service range (utilsnet.GetIndexedIP(cidr, 10)) when it is unset.
func clusterDNS(options map[string]any, serviceCIDR []*net.IPNet) (string, error) {
	var ips []string
	if values := listOption(options, "cluster-dns"); len(values) > 0 {
		for _, v := range values {
			ip := net.ParseIP(v)
			if ip == nil {
				return "", fmt.Errorf("invalid cluster-dns address %s; k3s would not start", v)
			}
			ips = append(ips, ip.String())
		}
		return strings.Join(ips, ","), nil
	}
	for _, n := range serviceCIDR {
		ips = append(ips, indexedIP(n, 10).String())
	}
	return strings.Join(ips, ","), nil
}

// indexedIP is the address index places after a network's first; IPv4 ranges only
// need the last four bytes, IPv6 ranges of /64 or smaller the last eight.
func indexedIP(n *net.IPNet, index uint64) net.IP {
	ip := slices.Clone(n.IP.To16())
	low := binary.BigEndian.Uint64(ip[8:]) + index
	binary.BigEndian.PutUint64(ip[8:], low)
	if v4 := ip.To4(); v4 != nil {
		return v4
	}
	return ip
}
