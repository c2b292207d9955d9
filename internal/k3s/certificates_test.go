package k3s

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"testing"

	"sigs.k8s.io/cluster-api/util/certs"
)

// New CAs get ECDSA P-256 keys: a k3s server signs with them as readily as with RSA,
// and generating one costs a fraction of an RSA-2048 key (at hundreds of clusters,
// RSA key generation was the largest single cost of the control plane's first pass).
func TestNewCAsHaveECDSAP256Keys(t *testing.T) {
	cas := ClusterCertificates()
	if err := cas.Generate(); err != nil {
		t.Fatal(err)
	}
	for _, ca := range cas {
		key, err := certs.DecodePrivateKeyPEM(ca.KeyPair.Key)
		if err != nil {
			t.Fatalf("%s: %v", ca.Purpose, err)
		}
		ec, ok := key.(*ecdsa.PrivateKey)
		if !ok || ec.Curve != elliptic.P256() {
			t.Errorf("%s: key is %T, want an ECDSA P-256 key", ca.Purpose, key)
		}
		crt, err := certs.DecodeCertPEM(ca.KeyPair.Cert)
		if err != nil {
			t.Fatalf("%s: %v", ca.Purpose, err)
		}
		if !crt.IsCA {
			t.Errorf("%s: not a CA certificate", ca.Purpose)
		}
		if err := crt.CheckSignatureFrom(crt); err != nil {
			t.Errorf("%s: not self-signed by its key: %v", ca.Purpose, err)
		}
	}
}
