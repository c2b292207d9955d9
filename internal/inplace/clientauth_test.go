package inplace

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/capk3s/capk3s/test/envtest"
)

// The extension's server answers only callers with a client certificate from a CA
// it trusts, and trusts a renewed CA bundle without a restart.
func TestClientAuthority(t *testing.T) {
	t.Parallel()
	trusted, err := envtest.NewClientCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := envtest.NewClientCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	authority, err := newClientAuthority([]string{trusted.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	authority.tlsOption(srv.TLS)
	srv.StartTLS()
	t.Cleanup(srv.Close)

	call := func(cert *tls.Certificate) error {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: x509.NewCertPool()}
		cfg.RootCAs.AddCert(srv.Certificate())
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		resp, err := c.Get(srv.URL)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	_, _, good, err := trusted.Issue("capi-core")
	if err != nil {
		t.Fatal(err)
	}
	_, _, foreign, err := other.Issue("intruder")
	if err != nil {
		t.Fatal(err)
	}
	if err := call(nil); err == nil {
		t.Error("a caller without a client certificate was answered")
	}
	if err := call(&foreign); err == nil {
		t.Error("a caller with a certificate from another CA was answered")
	}
	if err := call(&good); err != nil {
		t.Errorf("a caller with a trusted certificate was refused: %v", err)
	}

	// The CA is replaced (renewed by cert-manager): the new one's clients are
	// answered, the old one's no longer.
	bundle, err := os.ReadFile(other.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	if err := os.WriteFile(trusted.CAFile, bundle, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(trusted.CAFile, later, later); err != nil {
		t.Fatal(err)
	}
	if err := call(&foreign); err != nil {
		t.Errorf("after the CA file changed, a certificate of the new CA was refused: %v", err)
	}
	if err := call(&good); err == nil {
		t.Error("after the CA file changed, a certificate of the old CA was still answered")
	}
}

// Without a readable bundle the extension does not start: an extension that
// answered anyone would be worse than none.
func TestClientAuthorityNeedsABundle(t *testing.T) {
	t.Parallel()
	if _, err := newClientAuthority(nil); err == nil {
		t.Error("no client CA file: want an error")
	}
	if _, err := newClientAuthority([]string{t.TempDir() + "/missing.crt"}); err == nil {
		t.Error("a missing client CA file: want an error")
	}
	empty := t.TempDir() + "/empty.crt"
	if err := os.WriteFile(empty, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := newClientAuthority([]string{empty}); err == nil {
		t.Error("a client CA file without a certificate: want an error")
	}
	if _, err := newClientAuthority([]string{t.TempDir()}); err == nil {
		t.Error("only an empty directory: want an error")
	}
}

// A directory (an optional Secret's volume) adds the certificates in it, and an
// empty one adds nothing beside a file that has one.
func TestClientAuthorityDirectories(t *testing.T) {
	t.Parallel()
	own, err := envtest.NewClientCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	user, err := envtest.NewClientCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The directory holds only the user's CA, as a Secret's volume would.
	userDir := t.TempDir()
	bundle, err := os.ReadFile(user.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(userDir+"/ca.crt", bundle, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(userDir+"/README", []byte("not read"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := newClientAuthority([]string{own.CAFile, t.TempDir(), userDir})
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := envtest.NewClientCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, _, foreign, err := stranger.Issue("stranger")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.verify(foreign.Certificate, nil); err == nil {
		t.Error("a certificate of an untrusted CA was accepted")
	}
	for name, ca := range map[string]*envtest.ClientCA{"own": own, "user": user} {
		_, _, pair, err := ca.Issue(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.verify(pair.Certificate, nil); err != nil {
			t.Errorf("a certificate of the %s CA was refused: %v", name, err)
		}
	}
}
