package envtest

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/cluster-api/util/secret"
)

// ClientCA is a CA for client certificates, as a Runtime Extension's callers present
// them: its bundle is in CAFile, and Issue writes certificates it signs.
type ClientCA struct {
	CAFile string
	dir    string
	ca     *secret.Certificate
}

// NewClientCA makes a new CA and writes its certificate to dir/ca.crt.
func NewClientCA(dir string) (*ClientCA, error) {
	ca := &secret.Certificate{Purpose: secret.ClusterCA}
	if err := ca.Generate(); err != nil {
		return nil, fmt.Errorf("generating a client CA: %w", err)
	}
	c := &ClientCA{CAFile: filepath.Join(dir, "ca.crt"), dir: dir, ca: ca}
	if err := os.WriteFile(c.CAFile, ca.KeyPair.Cert, 0o600); err != nil {
		return nil, err
	}
	return c, nil
}

// Issue writes a client certificate for commonName, signed by the CA, to
// dir/<commonName>.crt and .key, and returns both paths and the pair for a TLS client.
func (c *ClientCA) Issue(commonName string) (certFile, keyFile string, pair tls.Certificate, err error) {
	caCert, err := certs.DecodeCertPEM(c.ca.KeyPair.Cert)
	if err != nil {
		return "", "", pair, err
	}
	caKey, err := certs.DecodePrivateKeyPEM(c.ca.KeyPair.Key)
	if err != nil {
		return "", "", pair, err
	}
	key, err := certs.NewPrivateKey()
	if err != nil {
		return "", "", pair, err
	}
	cfg := certs.Config{CommonName: commonName, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	cert, err := cfg.NewSignedCert(key, caCert, caKey)
	if err != nil {
		return "", "", pair, err
	}
	certPEM, keyPEM := certs.EncodeCertPEM(cert), certs.EncodePrivateKeyPEM(key)
	certFile, keyFile = filepath.Join(c.dir, commonName+".crt"), filepath.Join(c.dir, commonName+".key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return "", "", pair, err
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return "", "", pair, err
	}
	pair, err = tls.X509KeyPair(certPEM, keyPEM)
	return certFile, keyFile, pair, err
}
