package inplace

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// clientAuthority verifies the client certificates of the extension's callers against
// CA bundles read from files. The Runtime SDK's callers (CAPI core, capk3s's own
// control plane) present client certificates when given one
// (--runtime-extension-client-cert-file), and an extension that can change k3s on any
// node must not answer anybody else.
//
// controller-runtime's webhook server can require client certificates too
// (ClientCAName), but it reads one file inside the serving certificate's directory,
// once; the bundles here are re-read when a file changes, so that a CA that
// cert-manager renews is trusted without a restart.
type clientAuthority struct {
	files []string

	mu    sync.Mutex
	pool  *x509.CertPool
	stamp string // the files' sizes and modification times when pool was read
}

// newClientAuthority reads the bundles once, so that a missing file or no certificate
// at all is an error at start rather than a refusal of every caller.
func newClientAuthority(files []string) (*clientAuthority, error) {
	if len(files) == 0 {
		return nil, errors.New("no client CA file: the extension serves only callers with a client certificate")
	}
	a := &clientAuthority{files: files}
	if _, err := a.current(); err != nil {
		return nil, err
	}
	return a, nil
}

// tlsOption makes a server require a client certificate and verify it with a.
func (a *clientAuthority) tlsOption(cfg *tls.Config) {
	cfg.ClientAuth = tls.RequireAnyClientCert
	cfg.VerifyPeerCertificate = a.verify
}

// verify checks the client's chain against the current bundles, for client use.
func (a *clientAuthority) verify(rawCerts [][]byte, _ [][]*x509.Certificate) error {
	if len(rawCerts) == 0 {
		return errors.New("no client certificate")
	}
	certs := make([]*x509.Certificate, 0, len(rawCerts))
	for _, raw := range rawCerts {
		c, err := x509.ParseCertificate(raw)
		if err != nil {
			return fmt.Errorf("client certificate: %w", err)
		}
		certs = append(certs, c)
	}
	pool, err := a.current()
	if err != nil {
		return err
	}
	intermediates := x509.NewCertPool()
	for _, c := range certs[1:] {
		intermediates.AddCert(c)
	}
	_, err = certs[0].Verify(x509.VerifyOptions{
		Roots: pool, Intermediates: intermediates, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	return err
}

// current is the pool of the bundles as they are now, read again when a file's size
// or modification time changed. A directory stands for the *.crt and *.pem files in
// it (a Secret's volume, which may be empty when the Secret is optional); together
// the files must hold at least one certificate.
func (a *clientAuthority) current() (*x509.CertPool, error) {
	files, err := bundleFiles(a.files)
	if err != nil {
		return nil, err
	}
	stamp := ""
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return nil, fmt.Errorf("client CA file: %w", err)
		}
		stamp += fmt.Sprintf("%s:%d:%d;", f, st.Size(), st.ModTime().UnixNano())
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pool != nil && stamp == a.stamp {
		return a.pool, nil
	}
	pool, n := x509.NewCertPool(), 0
	for _, f := range files {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("client CA file: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client CA file %s holds no PEM certificate", f)
		}
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("no client CA certificate in %s", strings.Join(a.files, ", "))
	}
	a.pool, a.stamp = pool, stamp
	return pool, nil
}

// bundleFiles expands directories into the certificate files they hold, skipping the
// hidden entries a Secret volume keeps its versions in.
func bundleFiles(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("client CA file: %w", err)
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("client CA directory: %w", err)
		}
		for _, e := range entries {
			name := e.Name()
			if !strings.HasPrefix(name, ".") && (strings.HasSuffix(name, ".crt") || strings.HasSuffix(name, ".pem")) {
				out = append(out, filepath.Join(p, name))
			}
		}
	}
	return out, nil
}
