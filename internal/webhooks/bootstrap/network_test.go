package bootstrap

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// k3s reads these fields as IPs and CIDRs (comma-separated for dual-stack) and does
// not start when one does not parse: admission is the only place to say so.
func TestValidateServerNetwork(t *testing.T) {
	server := func(modify func(*bootstrapv1.KThreesServerConfig)) func(*bootstrapv1.KThreesConfigSpec) {
		return func(s *bootstrapv1.KThreesConfigSpec) { modify(&s.ServerConfig) }
	}
	tests := []struct {
		name   string
		modify func(*bootstrapv1.KThreesConfigSpec)
		want   []wantErr
	}{
		{name: "single-stack IPv4", modify: server(func(c *bootstrapv1.KThreesServerConfig) {
			c.ClusterCidr, c.ServiceCidr, c.ClusterDNS = "10.42.0.0/16", "10.43.0.0/16", "10.43.0.10"
		})},
		{name: "single-stack IPv6", modify: server(func(c *bootstrapv1.KThreesServerConfig) {
			c.ClusterCidr, c.ServiceCidr, c.ClusterDNS = "2001:db8:42::/56", "2001:db8:43::/112", "2001:db8:43::a"
		})},
		{name: "dual-stack, IPv6 first", modify: server(func(c *bootstrapv1.KThreesServerConfig) {
			c.ClusterCidr, c.ServiceCidr, c.ClusterDNS = "2001:db8:42::/56,10.42.0.0/16", "2001:db8:43::/112,10.43.0.0/16", "2001:db8:43::a,10.43.0.10"
		})},
		{name: "addresses", modify: server(func(c *bootstrapv1.KThreesServerConfig) {
			c.BindAddress, c.AdvertiseAddress = "0.0.0.0", "2001:db8::10"
		})},
		{name: "DNS without serviceCidr is not range-checked", modify: server(func(c *bootstrapv1.KThreesServerConfig) {
			c.ServiceCidr, c.ClusterDNS = "", "10.53.0.10"
		})},

		{name: "prefix too long", modify: server(func(c *bootstrapv1.KThreesServerConfig) { c.ClusterCidr = "10.42.0.0/33" }),
			want: []wantErr{{"spec.serverConfig.clusterCidr", `"10.42.0.0/33" is not a CIDR`}}},
		{name: "CIDR without prefix", modify: server(func(c *bootstrapv1.KThreesServerConfig) { c.ServiceCidr = "10.43.0.0" }),
			want: []wantErr{{"spec.serverConfig.serviceCidr", `"10.43.0.0" is not a CIDR: use one such as 10.43.0.0/16`}}},
		{name: "empty item", modify: server(func(c *bootstrapv1.KThreesServerConfig) { c.ClusterCidr = "10.42.0.0/16," }),
			want: []wantErr{{"spec.serverConfig.clusterCidr", `"" is not a CIDR`}}},
		{name: "space after the comma", modify: server(func(c *bootstrapv1.KThreesServerConfig) {
			c.ClusterCidr = "10.42.0.0/16, 2001:db8:42::/56"
		}), want: []wantErr{{"spec.serverConfig.clusterCidr", `" 2001:db8:42::/56" is not a CIDR`}}},
		{name: "two IPv4 CIDRs", modify: server(func(c *bootstrapv1.KThreesServerConfig) { c.ClusterCidr = "10.42.0.0/16,10.44.0.0/16" }),
			want: []wantErr{{"spec.serverConfig.clusterCidr", "at most one IPv4 and one IPv6"}}},
		{name: "three CIDRs", modify: server(func(c *bootstrapv1.KThreesServerConfig) {
			c.ServiceCidr = "10.43.0.0/16,2001:db8:43::/112,2001:db8:44::/112"
		}), want: []wantErr{{"spec.serverConfig.serviceCidr", "at most one IPv4 and one IPv6"}}},
		{name: "DNS not an IP", modify: server(func(c *bootstrapv1.KThreesServerConfig) { c.ClusterDNS = "coredns" }),
			want: []wantErr{{"spec.serverConfig.clusterDNS", `"coredns" is not an IP address`}}},
		{name: "DNS given as CIDR", modify: server(func(c *bootstrapv1.KThreesServerConfig) { c.ClusterDNS = "10.43.0.10/32" }),
			want: []wantErr{{"spec.serverConfig.clusterDNS", "is not an IP address"}}},
		{name: "two IPv6 DNS", modify: server(func(c *bootstrapv1.KThreesServerConfig) {
			c.ServiceCidr, c.ClusterDNS = "2001:db8:43::/112", "2001:db8:43::a,2001:db8:43::b"
		}), want: []wantErr{{"spec.serverConfig.clusterDNS", "at most one IPv4 and one IPv6"}}},
		{name: "DNS outside serviceCidr", modify: server(func(c *bootstrapv1.KThreesServerConfig) {
			c.ServiceCidr, c.ClusterDNS = "10.43.0.0/16", "10.53.0.10"
		}), want: []wantErr{{"spec.serverConfig.clusterDNS", "10.53.0.10 is not inside spec.serverConfig.serviceCidr"}}},
		{name: "IPv6 DNS on an IPv4-only service network", modify: server(func(c *bootstrapv1.KThreesServerConfig) {
			c.ServiceCidr, c.ClusterDNS = "10.43.0.0/16", "10.43.0.10,2001:db8:43::a"
		}), want: []wantErr{{"spec.serverConfig.clusterDNS", "2001:db8:43::a is not inside spec.serverConfig.serviceCidr"}}},
		{name: "bind address not an IP", modify: server(func(c *bootstrapv1.KThreesServerConfig) { c.BindAddress = "localhost" }),
			want: []wantErr{{"spec.serverConfig.bindAddress", `must be an IP address such as 0.0.0.0`}}},
		{name: "advertise address with a zone", modify: server(func(c *bootstrapv1.KThreesServerConfig) { c.AdvertiseAddress = "fe80::1%eth0" }),
			want: []wantErr{{"spec.serverConfig.advertiseAddress", "must be an IP address"}}},
		{name: "advertise address with leading zeros", modify: server(func(c *bootstrapv1.KThreesServerConfig) { c.AdvertiseAddress = "10.0.0.010" }),
			want: []wantErr{{"spec.serverConfig.advertiseAddress", "must be an IP address"}}},
		{name: "every network error is reported", modify: server(func(c *bootstrapv1.KThreesServerConfig) {
			c.ClusterCidr, c.ServiceCidr, c.ClusterDNS, c.BindAddress, c.AdvertiseAddress = "a", "b", "c", "d", "e"
		}), want: []wantErr{
			{"spec.serverConfig.bindAddress", "must be an IP address"},
			{"spec.serverConfig.advertiseAddress", "must be an IP address"},
			{"spec.serverConfig.clusterCidr", "is not a CIDR"},
			{"spec.serverConfig.serviceCidr", "is not a CIDR"},
			{"spec.serverConfig.clusterDNS", "is not an IP address"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := validSpec()
			tt.modify(&spec)
			checkErrors(t, validateSpec(&spec, field.NewPath("spec")), tt.want)
		})
	}
}
