package sim

import (
	"crypto/x509"
	"encoding/pem"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// Each machine's k3s holds leaf certificates with k3s's lifetimes (k3smodel,
// certificates.go): signed when k3s first starts on the machine, or at the time of
// simv1.CertificatesIssuedAtAnnotation; a k3s restart renews them as k3s does (the
// agent's always, a server's own inside the last 120 days). The simulator restarts
// k3s when a machine held stopped (node-ready "unknown") runs again, and when a
// system-upgrade-controller Plan's Job upgrades or restarts it (suc.go). A kubelet
// whose client certificate has expired can no longer post its Node's status
// (nodehealth.go). certmonitor.go plays k3s's certificate monitor.

// nodeCerts is one node's certificates and its certificate monitor's state.
type nodeCerts struct {
	server bool
	leaves []k3smodel.Leaf
	// issuedAt is the CertificatesIssuedAtAnnotation value last applied.
	issuedAt string
	// checked is the monitor's last check since k3s started; zero before the first.
	checked time.Time
	// events are the Events the monitor recorded since k3s started, by content: its
	// event recorder counts a repeat on the same Event.
	events map[k3smodel.CertEvent]string
}

// k3sCAs are the CAs k3s uses: the ones in the first server's data with their
// real dates, and those k3s makes itself, at the first server's start.
func k3sCAs(b *bootData, at time.Time) map[k3smodel.CAName]k3smodel.CA {
	cas := map[k3smodel.CAName]k3smodel.CA{}
	for _, f := range k3smodel.CAFiles {
		cas[f.CA] = k3smodel.GeneratedCA(f.CA, at)
	}
	for name, path := range map[k3smodel.CAName]string{k3smodel.ServerCA: serverCACertPath, k3smodel.ClientCA: clientCACertPath} {
		if ca, ok := caFromPEM(name, b.files[path]); ok {
			cas[name] = ca
		}
	}
	return cas
}

// caFromPEM reads the first certificate of a PEM file.
func caFromPEM(name k3smodel.CAName, raw []byte) (k3smodel.CA, bool) {
	block, _ := pem.Decode(raw)
	if block == nil {
		return k3smodel.CA{}, false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return k3smodel.CA{}, false
	}
	return k3smodel.CA{Name: name, Subject: cert.Subject, NotBefore: cert.NotBefore, NotAfter: cert.NotAfter}, true
}

// certsOfLocked is a node's certificate state, made on k3s's first start (now) if new.
// Under c.mu.
func (c *workloadCluster) certsOfLocked(node string, server bool, now time.Time) *nodeCerts {
	if c.certs == nil {
		c.certs = map[string]*nodeCerts{}
	}
	nc, ok := c.certs[node]
	if !ok {
		nc = &nodeCerts{server: server, leaves: k3smodel.IssueAll(server, node, c.cas, now, c.leafLifetimeLocked(node, server))}
		c.certs[node] = nc
	}
	return nc
}

// k3sStarted records k3s's first start on a node: its certificates are signed now.
func (c *workloadCluster) k3sStarted(node string, server bool, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.certsOfLocked(node, server, now)
}

// issuedAt signs every leaf certificate of a node anew as of `at`, once per value of
// the annotation. It dates them from `at` even before the CAs' NotBefore, which k3s
// would not (dynamiclistener never dates a certificate before its CA): a test's
// cluster made its CAs moments ago, and the annotation stands for a past the
// simulator did not live through.
func (c *workloadCluster) issuedAt(node string, server bool, value string, at, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nc := c.certsOfLocked(node, server, now)
	if nc.issuedAt == value {
		return
	}
	nc.issuedAt = value
	nc.leaves = k3smodel.IssueAll(server, node, nil, at, c.leafLifetimeLocked(node, server))
}

// restartK3s is k3s stopping and starting again on a node at now: its certificates
// are renewed as k3s does at start, and its monitor starts over. It returns the
// renewed files; nothing for a node the simulator never started.
func (c *workloadCluster) restartK3s(node string, now time.Time) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	nc, ok := c.certs[node]
	if !ok {
		return nil
	}
	var renewed []string
	nc.leaves, renewed = k3smodel.Restart(nc.leaves, c.cas, now, c.leafLifetimeLocked(node, nc.server))
	nc.checked, nc.events = time.Time{}, nil
	return renewed
}

// kubeletExpired says whether the node's kubelet client certificate has expired.
func (c *workloadCluster) kubeletExpired(node string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	nc, ok := c.certs[node]
	return ok && k3smodel.KubeletClientExpired(nc.leaves, now)
}

// certsServer says whether the simulator started k3s on the node as a server, and
// whether it started it at all.
func (c *workloadCluster) certsServer(node string) (server, known bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nc, ok := c.certs[node]
	return ok && nc.server, ok
}

// leavesOf is a copy of a node's leaf certificates.
func (c *workloadCluster) leavesOf(node string) []k3smodel.Leaf {
	c.mu.Lock()
	defer c.mu.Unlock()
	if nc, ok := c.certs[node]; ok {
		return append([]k3smodel.Leaf(nil), nc.leaves...)
	}
	return nil
}

// Certificates are the leaf certificates k3s holds on a Cluster's Node, as the
// simulator plays them; nil for a Node it did not start. Tests compare what the
// product reports with them.
func (p *Provider) Certificates(cluster types.NamespacedName, node string) []k3smodel.Leaf {
	c := p.cluster(cluster)
	if c == nil {
		return nil
	}
	return c.leavesOf(node)
}
