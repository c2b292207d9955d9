package sim

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/cluster-api/util/secret"

	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// Request-header names the workload apiserver reads identities from, as the front
// passes them (envtest.WorkloadOptions.RequestHeaderCA).
const (
	remoteUserHeader   = "X-Remote-User"
	remoteGroupHeader  = "X-Remote-Group"
	remoteExtraPrefix  = "X-Remote-Extra-"
	frontShutdownGrace = 2 * time.Second
)

// front is what answers on a cluster's endpoint: like k3s, which serves its
// supervisor paths and the Kubernetes API on one port, it answers the supervisor's
// /db/ paths itself and hands every other request to the workload kube-apiserver,
// which listens on a port of its own. It terminates TLS with a certificate the
// cluster's server CA signs, checks client certificates against the client CA, and
// passes a caller's identity on by request-header authentication, as kube-apiserver's
// own aggregation proxy does; bearer tokens and other headers go through untouched,
// and so do watches (streamed) and upgrades (exec, port-forward) on HTTP/1.1.
type front struct {
	srv       *http.Server
	clientCAs *x509.CertPool
	// withIdentity reaches the apiserver with the front's request-header client
	// certificate, for callers a client certificate identified; anonymous reaches it
	// with none, for callers with a bearer token or no credentials.
	withIdentity, anonymous *httputil.ReverseProxy
	supervisor              supervisorFunc
}

// supervisorFunc answers a supervisor path, given what the caller's credentials are.
type supervisorFunc func(http.ResponseWriter, *http.Request, k3smodel.Caller)

// frontIdentity is the CA the apiserver trusts for request headers, and the front's
// client certificate it signed.
type frontIdentity struct {
	caPEM []byte
	cert  tls.Certificate
}

// newFrontIdentity makes a request-header CA of the cluster's own and the front's
// certificate.
func newFrontIdentity() (*frontIdentity, error) {
	ca := &secret.Certificate{Purpose: secret.FrontProxyCA}
	if err := ca.Generate(); err != nil {
		return nil, fmt.Errorf("generating the front's request-header CA: %w", err)
	}
	cert, err := signedPair(ca.KeyPair.Cert, ca.KeyPair.Key, certs.Config{CommonName: "capk3s-sim-front", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return nil, err
	}
	return &frontIdentity{caPEM: ca.KeyPair.Cert, cert: cert}, nil
}

// signedPair makes a key and a certificate for it, signed by the given PEM CA.
func signedPair(caCertPEM, caKeyPEM []byte, cfg certs.Config) (tls.Certificate, error) {
	caCert, err := certs.DecodeCertPEM(caCertPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	caKey, err := certs.DecodePrivateKeyPEM(caKeyPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := certs.NewPrivateKey()
	if err != nil {
		return tls.Certificate{}, err
	}
	cert, err := cfg.NewSignedCert(key, caCert, caKey)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("signing %s: %w", cfg.CommonName, err)
	}
	return tls.X509KeyPair(certs.EncodeCertPEM(cert), certs.EncodePrivateKeyPEM(key))
}

// startFront listens on 127.0.0.1:port and serves until stop. backend is the
// apiserver's URL, which the server CA's certificate also serves.
func startFront(port int, serverCACert, serverCAKey, clientCACert []byte, id *frontIdentity, backend string, supervisor supervisorFunc) (*front, error) {
	serving, err := signedPair(serverCACert, serverCAKey, certs.Config{
		CommonName: "k3s",
		AltNames:   certs.AltNames{DNSNames: []string{"localhost", "kubernetes"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}},
		Usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return nil, err
	}
	clientCAs, serverCAs := x509.NewCertPool(), x509.NewCertPool()
	if !clientCAs.AppendCertsFromPEM(clientCACert) || !serverCAs.AppendCertsFromPEM(serverCACert) {
		return nil, errors.New("the front: no certificate in a CA PEM")
	}
	target, err := url.Parse(backend)
	if err != nil {
		return nil, err
	}
	f := &front{clientCAs: clientCAs, supervisor: supervisor,
		withIdentity: backendProxy(target, serverCAs, &id.cert), anonymous: backendProxy(target, serverCAs, nil)}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("the endpoint's port %d: %w", port, err)
	}
	f.srv = &http.Server{
		Handler:           f,
		ReadHeaderTimeout: 30 * time.Second,
		// Client certificates are checked per request, as kube-apiserver and k3s do:
		// a certificate of another CA is an authentication failure (401), not a
		// failed handshake.
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{serving}, ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12},
	}
	go func() { _ = f.srv.ServeTLS(ln, "", "") }()
	return f, nil
}

// backendProxy forwards to the apiserver, presenting cert when given. Upgrades need
// HTTP/1.1; everything else shares HTTP/2 connections, so that the hop costs little.
func backendProxy(target *url.URL, roots *x509.CertPool, cert *tls.Certificate) *httputil.ReverseProxy {
	tlsConfig := func() *tls.Config {
		c := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		if cert != nil {
			c.Certificates = []tls.Certificate{*cert}
		}
		return c
	}
	h2 := &http.Transport{TLSClientConfig: tlsConfig(), ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 16}
	h1 := &http.Transport{TLSClientConfig: tlsConfig(), MaxIdleConnsPerHost: 16,
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
		},
		Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Header.Get("Upgrade") != "" {
				return h1.RoundTrip(r)
			}
			return h2.RoundTrip(r)
		}),
		// Watches stream: every event goes out as it comes.
		FlushInterval: -1,
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// ServeHTTP routes the supervisor's paths to it and the rest to the apiserver.
func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == k3smodel.SnapshotPath || r.URL.Path == k3smodel.SnapshotPath+"/" {
		caller := k3smodel.Caller{}
		caller.User, caller.Password, caller.Basic = r.BasicAuth()
		_, caller.Groups, caller.Cert, caller.CertValid = f.clientCert(r)
		f.supervisor(w, r, caller)
		return
	}
	// Nobody but the front asserts identities.
	for name := range r.Header {
		if strings.EqualFold(name, remoteUserHeader) || strings.EqualFold(name, remoteGroupHeader) ||
			strings.HasPrefix(strings.ToLower(name), strings.ToLower(remoteExtraPrefix)) {
			r.Header.Del(name)
		}
	}
	user, groups, presented, valid := f.clientCert(r)
	switch {
	case valid:
		r.Header.Set(remoteUserHeader, user)
		for _, g := range groups {
			r.Header.Add(remoteGroupHeader, g)
		}
		f.withIdentity.ServeHTTP(w, r)
	case presented && r.Header.Get("Authorization") == "":
		// kube-apiserver's x509 authenticator fails such a request, unless a token
		// authenticates it.
		writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
	default:
		f.anonymous.ServeHTTP(w, r)
	}
}

// clientCert reads the caller's client certificate: whether one was presented,
// whether the client CA signed it, and the user (CN) and groups (O) it names.
func (f *front) clientCert(r *http.Request) (user string, groups []string, presented, valid bool) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return "", nil, false, false
	}
	leaf := r.TLS.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range r.TLS.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := leaf.Verify(x509.VerifyOptions{Roots: f.clientCAs, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return "", nil, true, false
	}
	return leaf.Subject.CommonName, leaf.Subject.Organization, true, true
}

// stop closes the endpoint: callers get connection refused, as from a cluster whose
// servers are all down.
func (f *front) stop() error {
	if f == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), frontShutdownGrace)
	defer cancel()
	if err := f.srv.Shutdown(ctx); err != nil {
		// Watches and upgraded connections do not end by themselves.
		return f.srv.Close()
	}
	return nil
}

// writeStatus answers with a Kubernetes Status, as kube-apiserver and k3s's
// supervisor (pkg/util/apierrors.go SendError) do.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: message, Reason: reason, Code: int32(code),
	}
	body, _ := json.Marshal(st)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
