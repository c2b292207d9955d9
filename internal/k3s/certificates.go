package k3s

import (
	"sigs.k8s.io/cluster-api/util/secret"
)

// Where a k3s server reads the CAs it is given instead of generating its own.
const (
	ServerTLSDir     = "/var/lib/rancher/k3s/server/tls"
	ServerCACertPath = ServerTLSDir + "/server-ca.crt"
	ServerCAKeyPath  = ServerTLSDir + "/server-ca.key"
	ClientCACertPath = ServerTLSDir + "/client-ca.crt"
	ClientCAKeyPath  = ServerTLSDir + "/client-ca.key"
	EtcdCACertPath   = ServerTLSDir + "/etcd/server-ca.crt"
	EtcdCAKeyPath    = ServerTLSDir + "/etcd/server-ca.key"
)

// ClientCA is the purpose of the "<cluster>-cca" Secret: k3s signs client
// certificates with a CA of their own, separate from the server CA ("<cluster>-ca").
// The name is cluster-api-k3s's, so its clusters are taken over as they are.
const ClientCA secret.Purpose = "cca"

// ClusterCertificates are the CAs every k3s server of a cluster shares, with the
// paths they are written to: the server CA (<cluster>-ca), the client CA
// (<cluster>-cca) and the etcd server CA (<cluster>-etcd).
func ClusterCertificates() secret.Certificates {
	return secret.Certificates{
		&secret.Certificate{Purpose: secret.ClusterCA, CertFile: ServerCACertPath, KeyFile: ServerCAKeyPath},
		&secret.Certificate{Purpose: ClientCA, CertFile: ClientCACertPath, KeyFile: ClientCAKeyPath},
		&secret.Certificate{Purpose: secret.EtcdCA, CertFile: EtcdCACertPath, KeyFile: EtcdCAKeyPath},
	}
}
