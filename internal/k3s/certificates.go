package k3s

import (
	kubeadmbootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
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

// KeyAlgorithm is the key type of the CAs and client certificates capk3s generates:
// ECDSA P-256, the kind of key k3s generates for its own certificates. Generating one
// costs a fraction of an RSA-2048 key, which at hundreds of clusters was the largest
// single cost of a control plane's first pass (docs/performance.md). Existing CAs,
// whatever their keys, are used as they are.
const KeyAlgorithm = kubeadmbootstrapv1.EncryptionAlgorithmECDSAP256

// ClusterCertificates are the CAs every k3s server of a cluster shares, with the
// paths they are written to: the server CA (<cluster>-ca), the client CA
// (<cluster>-cca) and the etcd server CA (<cluster>-etcd). Missing ones are generated
// with KeyAlgorithm keys.
func ClusterCertificates() secret.Certificates {
	return secret.Certificates{
		&secret.Certificate{Purpose: secret.ClusterCA, CertFile: ServerCACertPath, KeyFile: ServerCAKeyPath, KeyEncryptionAlgorithm: KeyAlgorithm},
		&secret.Certificate{Purpose: ClientCA, CertFile: ClientCACertPath, KeyFile: ClientCAKeyPath, KeyEncryptionAlgorithm: KeyAlgorithm},
		&secret.Certificate{Purpose: secret.EtcdCA, CertFile: EtcdCACertPath, KeyFile: EtcdCAKeyPath, KeyEncryptionAlgorithm: KeyAlgorithm},
	}
}
