package sim

import (
	"sort"
	"strings"
	"time"

	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// A k3s server signs every leaf certificate with dynamiclistener's NewSignedCert
// without a lifetime of its own, so CATTLE_NEW_SIGNED_CERT_EXPIRATION_DAYS in the
// server's environment sets it (k3smodel.LeafLifetimeFrom): for its own certificates
// (k3s pkg/daemons/control/deps/deps.go) and for those it signs for agents
// (pkg/server/handlers/handlers.go), v1.34 to v1.36. An agent's own environment
// changes nothing. Shown on real k3s v1.36.2 (test/realk3s, certificates_test.go): a
// server given 60 days by a file of its data signs 60-day certificates for itself and
// for an agent whose data sets nothing.

// serverEnvFiles are the environment files of k3s's unit (the install script's
// EnvironmentFile=-/etc/default/%N and -/etc/sysconfig/%N, in that order: a later one
// overrides) that bootstrap data can write; the script's own k3s.service.env holds
// only what the script was given.
var serverEnvFiles = []string{"/etc/default/k3s", "/etc/sysconfig/k3s"}

// signingLifetime is the leaf lifetime k3s would sign with on a server booted from b.
func (b *bootData) signingLifetime() time.Duration {
	value := ""
	for _, path := range serverEnvFiles {
		if v, ok := envFileValue(b.files[path], k3smodel.LeafLifetimeEnv); ok {
			value = v
		}
	}
	return k3smodel.LeafLifetimeFrom(value)
}

// envFileValue reads key from an environment file as systemd does: KEY=VALUE lines,
// '#' and ';' comments, one pair of quotes around the value removed; the last
// assignment wins.
func envFileValue(raw []byte, key string) (string, bool) {
	value, found := "", false
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) != key {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		value, found = v, true
	}
	return value, found
}

// serverSigns records the leaf lifetime a server's k3s signs with.
func (c *workloadCluster) serverSigns(node string, lifetime time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.signers == nil {
		c.signers = map[string]time.Duration{}
	}
	c.signers[node] = lifetime
}

// leafLifetimeLocked is the lifetime of the certificates a node gets when k3s starts
// there: a server signs its own; an agent's come from a server, the first by name
// here (real k3s: whichever server the agent asked, which only matters when servers
// disagree). Under c.mu.
func (c *workloadCluster) leafLifetimeLocked(node string, server bool) time.Duration {
	if server {
		if l, ok := c.signers[node]; ok {
			return l
		}
		return k3smodel.LeafLifetime
	}
	names := make([]string, 0, len(c.signers))
	for n := range c.signers {
		names = append(names, n)
	}
	if len(names) == 0 {
		return k3smodel.LeafLifetime
	}
	sort.Strings(names)
	return c.signers[names[0]]
}
