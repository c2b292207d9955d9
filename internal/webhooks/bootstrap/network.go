package bootstrap

import (
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// k3s parses these fields when it starts and exits on a bad value, long after the
// machine was created: a typo such as 10.42.0.0/33 is a machine that never joins.
// The lists are comma-separated for dual-stack, as k3s takes them: each item must
// parse, and there is at most one per IP family. Items are taken exactly as
// written (no spaces), since that is what reaches k3s's config file.

// validateServerNetwork checks the addresses and networks of serverConfig.
func validateServerNetwork(c *bootstrapv1.KThreesServerConfig, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateAddress(c.BindAddress, fldPath.Child("bindAddress"), "0.0.0.0")...)
	errs = append(errs, validateAddress(c.AdvertiseAddress, fldPath.Child("advertiseAddress"), "10.0.0.10")...)
	_, clusterErrs := parsePrefixList(c.ClusterCidr, fldPath.Child("clusterCidr"), "10.42.0.0/16", "2001:db8:42::/56")
	errs = append(errs, clusterErrs...)
	servicePath := fldPath.Child("serviceCidr")
	services, serviceErrs := parsePrefixList(c.ServiceCidr, servicePath, "10.43.0.0/16", "2001:db8:43::/112")
	errs = append(errs, serviceErrs...)
	dnsPath := fldPath.Child("clusterDNS")
	dns, dnsErrs := parseAddrList(c.ClusterDNS, dnsPath)
	errs = append(errs, dnsErrs...)
	if len(dnsErrs) == 0 && len(serviceErrs) == 0 && len(services) > 0 {
		errs = append(errs, validateDNSInServices(c.ClusterDNS, dns, services, dnsPath, servicePath)...)
	}
	return errs
}

// validateAddress requires one IP address, as k3s's bind-address and
// advertise-address are: no host name, no zone, no leading zeros.
func validateAddress(s string, fldPath *field.Path, example string) field.ErrorList {
	if s == "" {
		return nil
	}
	if a, err := netip.ParseAddr(s); err != nil || a.Zone() != "" {
		return field.ErrorList{field.Invalid(fldPath, s, fmt.Sprintf(
			"must be an IP address such as %s or 2001:db8::10 (not a host name)", example))}
	}
	return nil
}

// parsePrefixList parses a CIDR or a dual-stack pair of CIDRs.
func parsePrefixList(s string, fldPath *field.Path, v4Example, v6Example string) ([]netip.Prefix, field.ErrorList) {
	if s == "" {
		return nil, nil
	}
	items := strings.Split(s, ",")
	prefixes := make([]netip.Prefix, 0, len(items))
	for _, item := range items {
		p, err := netip.ParsePrefix(item)
		if err != nil {
			return nil, field.ErrorList{field.Invalid(fldPath, s, fmt.Sprintf(
				"%q is not a CIDR: use one such as %s, or for dual-stack one IPv4 and one IPv6 CIDR separated by a comma (%s,%s)",
				item, v4Example, v4Example, v6Example))}
		}
		prefixes = append(prefixes, p)
	}
	if msg := familiesRepeated(len(prefixes), func(i int) bool { return prefixes[i].Addr().Is4() }); msg != "" {
		return nil, field.ErrorList{field.Invalid(fldPath, s, msg)}
	}
	return prefixes, nil
}

// parseAddrList parses clusterDNS: an IP, or a dual-stack pair of IPs.
func parseAddrList(s string, fldPath *field.Path) ([]netip.Addr, field.ErrorList) {
	if s == "" {
		return nil, nil
	}
	items := strings.Split(s, ",")
	addrs := make([]netip.Addr, 0, len(items))
	for _, item := range items {
		a, err := netip.ParseAddr(item)
		if err != nil || a.Zone() != "" {
			return nil, field.ErrorList{field.Invalid(fldPath, s, fmt.Sprintf(
				"%q is not an IP address: use one such as 10.43.0.10, or for dual-stack one IPv4 and one IPv6 address separated by a comma (10.43.0.10,2001:db8:43::a)",
				item))}
		}
		addrs = append(addrs, a)
	}
	if msg := familiesRepeated(len(addrs), func(i int) bool { return addrs[i].Is4() }); msg != "" {
		return nil, field.ErrorList{field.Invalid(fldPath, s, msg)}
	}
	return addrs, nil
}

// familiesRepeated explains a list that is not single- or dual-stack, or is "".
func familiesRepeated(n int, is4 func(int) bool) string {
	v4 := 0
	for i := range n {
		if is4(i) {
			v4++
		}
	}
	if v4 > 1 || n-v4 > 1 {
		return fmt.Sprintf("lists %d IPv4 and %d IPv6 entries; k3s takes at most one IPv4 and one IPv6 (dual-stack)", v4, n-v4)
	}
	return ""
}

// validateDNSInServices requires each cluster DNS address inside the service network
// of its family: CoreDNS's Service gets that address, which the apiserver only hands
// out from the service CIDRs. Without serviceCidr, k3s's default applies; that case
// is left to k3s.
func validateDNSInServices(raw string, dns []netip.Addr, services []netip.Prefix, dnsPath, servicePath *field.Path) field.ErrorList {
	for _, a := range dns {
		inside := false
		for _, p := range services {
			inside = inside || p.Contains(a)
		}
		if !inside {
			return field.ErrorList{field.Invalid(dnsPath, raw, fmt.Sprintf(
				"%s is not inside %s: the cluster DNS Service takes its address from the service network", a, servicePath))}
		}
	}
	return nil
}
