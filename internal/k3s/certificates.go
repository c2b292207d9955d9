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

// ClientKeyAlgorithm is the key type of the client certificates capk3s generates (the
// kubeconfig's): ECDSA P-256, which k3s's API server accepts like any client key, and
// which costs a fraction of an RSA-2048 key to generate; at hundreds of clusters, RSA
// key generation was the largest single CPU cost of the control plane
// (docs/performance.md). The client CA, which only k3s and capk3s read, is ECDSA
// too, as k3s makes its own CAs; the server and etcd CAs keep CAPI's default
// (RSA-2048): tools beside the control plane read them, and CAPI's in-memory test
// infrastructure, for one, accepts only RSA keys for them.
const ClientKeyAlgorithm = kubeadmbootstrapv1.EncryptionAlgorithmECDSAP256

// ClusterCertificates are the CAs every k3s server of a cluster shares, with the
// paths they are written to: the server CA (<cluster>-ca), the client CA
// (<cluster>-cca) and the etcd server CA (<cluster>-etcd).
func ClusterCertificates() secret.Certificates {
	return secret.Certificates{
		&secret.Certificate{Purpose: secret.ClusterCA, CertFile: ServerCACertPath, KeyFile: ServerCAKeyPath},
		&secret.Certificate{Purpose: ClientCA, CertFile: ClientCACertPath, KeyFile: ClientCAKeyPath, KeyEncryptionAlgorithm: ClientKeyAlgorithm},
		&secret.Certificate{Purpose: secret.EtcdCA, CertFile: EtcdCACertPath, KeyFile: EtcdCAKeyPath},
	}
}
