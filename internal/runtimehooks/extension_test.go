package runtimehooks

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/exp/runtime/server"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// testExtension is a real Runtime SDK extension server (CAPI's own server package) on
// a free local port, with a certificate of its own.
type testExtension struct {
	url      string
	caBundle []byte
}

// startExtension serves the given handlers over TLS until the test ends.
func startExtension(t *testing.T, cat *runtimecatalog.Catalog, handlers ...server.ExtensionHandler) testExtension {
	t.Helper()
	dir := t.TempDir()
	caPEM := writeServingCert(t, dir)
	port := freePort(t)
	srv, err := server.New(server.Options{Catalog: cat, Host: "127.0.0.1", Port: port, CertDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range handlers {
		if err := srv.AddExtensionHandler(h); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("extension server: %v", err)
		}
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
		if err == nil {
			_ = conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("extension server did not come up on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return testExtension{url: "https://" + addr, caBundle: caPEM}
}

// writeServingCert writes a self-signed certificate for 127.0.0.1 as tls.crt and
// tls.key into dir and returns it, which is also its own CA.
func writeServingCert(t *testing.T, dir string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test extension"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPEM
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// newCatalog is the hooks' catalog as CAPI's managers build it.
func newCatalog(t *testing.T) *runtimecatalog.Catalog {
	t.Helper()
	cat, err := NewCatalog()
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// newTestClient is a client whose namespace reads see the given Namespaces.
func newTestClient(t *testing.T, cat *runtimecatalog.Catalog, namespaces ...*corev1.Namespace) *hookClient {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := make([]runtime.Object, 0, len(namespaces))
	for _, ns := range namespaces {
		objs = append(objs, ns)
	}
	c, err := New(Options{Reader: fake.NewClientBuilder().WithScheme(scheme).WithRuntimeObjects(objs...).Build(), Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	return c.(*hookClient)
}

// extensionConfig points at ext; settings and a namespace selector are optional.
func extensionConfig(name string, ext testExtension, settings map[string]string, selector *metav1.LabelSelector) *runtimev1.ExtensionConfig {
	return &runtimev1.ExtensionConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
		Spec: runtimev1.ExtensionConfigSpec{
			ClientConfig:      runtimev1.ClientConfig{URL: ext.url, CABundle: ext.caBundle},
			Settings:          settings,
			NamespaceSelector: selector,
		},
	}
}

// discoverAndRegister does what CAPI's ExtensionConfig reconciler does with a new
// ExtensionConfig.
func discoverAndRegister(t *testing.T, c *hookClient, ext *runtimev1.ExtensionConfig) *runtimev1.ExtensionConfig {
	t.Helper()
	discovered, err := c.Discover(context.Background(), ext)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if err := c.Register(discovered); err != nil {
		t.Fatalf("Register: %v", err)
	}
	return discovered
}

// retryFromSettings is an UpdateMachine handler that answers "in progress" with the
// retry its ExtensionConfig's "retry" setting names, and echoes the settings it got.
func retryFromSettings(_ context.Context, req *runtimehooksv1.UpdateMachineRequest, resp *runtimehooksv1.UpdateMachineResponse) {
	retry, _ := strconv.Atoi(req.Settings["retry"])
	resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
	resp.SetRetryAfterSeconds(int32(retry))
	resp.SetMessage(fmt.Sprintf("machine %s, retry %s, extra %s", req.Desired.Machine.Name, req.Settings["retry"], req.Settings["extra"]))
}

func ignorePolicy() *runtimehooksv1.FailurePolicy {
	return ptr.To(runtimehooksv1.FailurePolicyIgnore)
}

func itoa(i int) string { return strconv.Itoa(i) }
