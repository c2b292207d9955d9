package k3s

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"testing"

	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/cluster-api/util/secret"
)

// The CAs that only k3s reads are ECDSA, as k3s makes its own; the server and etcd
// CAs keep RSA, which tools beside the control plane (CAPI's in-memory test
// infrastructure, for one) insist on.
func TestGeneratedCAKeyTypes(t *testing.T) {
	cas := ClusterCertificates()
	if err := cas.Generate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		purpose secret.Purpose
		ecdsa   bool
	}{{secret.ClusterCA, false}, {secret.EtcdCA, false}, {ClientCA, true}} {
		ca := cas.GetByPurpose(tc.purpose)
		if ca == nil || ca.KeyPair == nil {
			t.Fatalf("no %s CA was generated", tc.purpose)
		}
		key, err := certs.DecodePrivateKeyPEM(ca.KeyPair.Key)
		if err != nil {
			t.Fatalf("%s CA key: %v", tc.purpose, err)
		}
		switch key.(type) {
		case *ecdsa.PrivateKey:
			if !tc.ecdsa {
				t.Errorf("the %s CA's key is ECDSA, want RSA", tc.purpose)
			}
		case *rsa.PrivateKey:
			if tc.ecdsa {
				t.Errorf("the %s CA's key is RSA, want ECDSA", tc.purpose)
			}
		default:
			t.Errorf("the %s CA's key is a %T", tc.purpose, key)
		}
	}
}
