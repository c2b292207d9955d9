package sim

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

func caPEM(t *testing.T, cn string, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-24 * time.Hour), NotAfter: notAfter, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestK3sCAsTakeTheDataCAsWithTheirDates: the CAs capk3s writes keep their real
// NotAfter, so a server warns of one within 365 days; the CAs k3s makes itself last
// ten years from the first server's start.
func TestK3sCAsTakeTheDataCAsWithTheirDates(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Second)
	serverExpiry := now.Add(200 * 24 * time.Hour)
	b := &bootData{files: map[string][]byte{
		serverCACertPath: caPEM(t, "kubernetes", serverExpiry),
		clientCACertPath: caPEM(t, "kubernetes-client", now.Add(5*365*24*time.Hour)),
	}}
	cas := k3sCAs(b, now)
	if got := cas[k3smodel.ServerCA]; !got.NotAfter.Equal(serverExpiry) || got.Subject.CommonName != "kubernetes" {
		t.Errorf("server CA = %+v, want the data's, expiring %s", got, serverExpiry)
	}
	if got := cas[k3smodel.ETCDPeerCA]; !got.NotAfter.Equal(now.Add(-time.Hour).Add(3650*24*time.Hour)) ||
		!strings.HasPrefix(got.Subject.CommonName, "etcd-peer-ca@") {
		t.Errorf("etcd peer CA = %+v, want k3s's own, ten years", got)
	}
	check := k3smodel.CertCheck{Server: true, Leaves: k3smodel.IssueAll(true, "s-0", cas, now, k3smodel.LeafLifetime), CAs: cas, Now: now, First: true}
	evs := check.Events()
	if len(evs) != 1 || evs[0].Reason != k3smodel.CACertificateExpirationWarning ||
		!strings.HasSuffix(evs[0].Message, "certificate-authority/server-ca.crt: certificate CN=kubernetes will expire within 365 days at "+serverExpiry.Format(time.RFC3339)) {
		t.Errorf("Events = %v, want only the server CA's warning", evs)
	}
	// Data without CAs (a datastore server's, say): k3s makes them all.
	if got := k3sCAs(&bootData{files: map[string][]byte{}}, now)[k3smodel.ServerCA]; !strings.HasPrefix(got.Subject.CommonName, "k3s-server-ca@") {
		t.Errorf("server CA without data = %+v, want k3s's own", got)
	}
}
