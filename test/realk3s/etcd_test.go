package realk3s

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcdMembers asks the etcd of a running server machine for its member list, with
// the etcd client certificate k3s keeps on that machine: what k3s itself sees, not
// what capk3s reports.
func etcdMembers(ctx context.Context, machine string) ([]string, error) {
	m, ok := layer.Machine(machine)
	if !ok {
		return nil, fmt.Errorf("no running machine %s", machine)
	}
	tlsDir := filepath.Join(m.Dir(), "rancher", "k3s", "server", "tls", "etcd")
	cert, err := tls.LoadX509KeyPair(filepath.Join(tlsDir, "client.crt"), filepath.Join(tlsDir, "client.key"))
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(filepath.Join(tlsDir, "server-ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{"https://" + m.Address + ":2379"},
		DialTimeout: 5 * time.Second,
		TLS:         &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12},
		Logger:      nil,
	})
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := c.MemberList(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, mem := range resp.Members {
		if mem.IsLearner {
			names = append(names, mem.Name+" (learner)")
			continue
		}
		names = append(names, mem.Name)
	}
	sort.Strings(names)
	return names, nil
}
