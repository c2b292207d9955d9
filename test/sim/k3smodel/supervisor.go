package k3smodel

import "strconv"

// DefaultHTTPSPort is k3s's https-listen-port when unset (pkg/cli/cmds/server.go,
// v1.34.9, v1.35.4, v1.36.2).
const DefaultHTTPSPort = 6443

// SupervisorPort is the port a server's supervisor listens on, the one a joining
// node's --server URL names: supervisor-port (hidden), else https-listen-port, else
// 6443 (pkg/cli/server/server.go run(): SupervisorPort falls back to HTTPSPort;
// v1.34.9, v1.35.4, v1.36.2).
//
// Any server's supervisor lets a node join: the URL need not be a load balancer.
// Once joined, an agent learns every server from the cluster (the supervisor's
// apiserver address list, else the kubernetes EndpointSlices) and balances across
// them itself, keeping the URL it joined through as the fallback
// (pkg/agent/tunnel/tunnel.go, pkg/agent/loadbalancer/loadbalancer.go SetDefault;
// v1.34.9, v1.36.2). So only the first contact needs the address it was given.
func SupervisorPort(cfg Config) int {
	for _, key := range []string{"supervisor-port", "https-listen-port"} {
		if p, err := strconv.Atoi(cfg.Last(key)); err == nil && p > 0 {
			return p
		}
	}
	return DefaultHTTPSPort
}
