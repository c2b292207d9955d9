package envtest

import (
	"bytes"
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

const (
	// workloadHost is where workload apiservers listen and what their serving
	// certificates name, with localhost.
	workloadHost = "127.0.0.1"
	// workloadStartTimeout bounds each of etcd and kube-apiserver answering /healthz.
	// envtest's default of 20s is tight when several test packages start apiservers
	// at once on a loaded machine.
	workloadStartTimeout = time.Minute
	// workloadReadyTimeout bounds the wait for /readyz once /healthz has answered.
	workloadReadyTimeout = 30 * time.Second
	// logTailBytes is how much of a failed process's log an error quotes.
	logTailBytes = 4096

	// File names in the server's directory. apiserver.crt and apiserver.key are the
	// names envtest's APIServer looks for: finding them, it generates no serving
	// certificate (nor service-account key) of its own.
	servingCertFile = "apiserver.crt"
	servingKeyFile  = "apiserver.key"
	clientCAFile    = "client-ca.crt"
	requestCAFile   = "requestheader-ca.crt"
	saPublicFile    = "service-account.pub"
	saPrivateFile   = "service-account.key"
)

// errPortInUse marks a start that failed because another process held a port that
// was free when it was picked; only that failure is worth a retry.
var errPortInUse = errors.New("port already in use")

// WorkloadAPIServer is a kube-apiserver + etcd standing in for a k3s cluster's API.
type WorkloadAPIServer struct {
	// Host is the address the apiserver listens on (127.0.0.1).
	Host string
	// Port is the apiserver's secure port.
	Port int

	serverCACert []byte
	dir          string
	etcd         *envtest.Etcd
	apiServer    *envtest.APIServer
	logs         []*os.File

	stopOnce sync.Once
	stopErr  error
}

// WorkloadOptions choose where a workload apiserver listens and keeps its files.
type WorkloadOptions struct {
	// Port is the secure port; 0 picks a free one. A given port is not retried when
	// it is taken: whoever chose it must choose again.
	Port int
	// Dir is the parent of the server's directory; "" is the system's temporary one.
	Dir string
	// EtcdURL is an etcd endpoint to store the cluster in (kine in front of an external
	// datastore, see StartKine); "" starts an etcd of the server's own, stopped with it.
	EtcdURL string
	// RequestHeaderCA, when set, is the PEM CA whose client certificates may assert a
	// user with the X-Remote-User and X-Remote-Group headers (kube-apiserver's
	// request-header authentication): a front on another port that terminates TLS
	// itself passes its callers' identities so, as k3s's supervisor does for the
	// apiserver it fronts.
	RequestHeaderCA []byte
	// Issuer is the service-account issuer; "" is the server's own URL. A server
	// behind a front names the front's URL, where its clients reach it.
	Issuer string
}

// StartWorkloadAPIServer starts one whose serving certificate is signed by serverCA and
// which authenticates clients by certificates signed by clientCA. Both are PEM cert+key.
// On error nothing is left running.
func StartWorkloadAPIServer(serverCACert, serverCAKey, clientCACert []byte) (*WorkloadAPIServer, error) {
	return StartWorkloadAPIServerWith(WorkloadOptions{}, serverCACert, serverCAKey, clientCACert)
}

// StartWorkloadAPIServerWith is StartWorkloadAPIServer with options.
func StartWorkloadAPIServerWith(opts WorkloadOptions, serverCACert, serverCAKey, clientCACert []byte) (*WorkloadAPIServer, error) {
	caCert, err := certs.DecodeCertPEM(serverCACert)
	if err != nil {
		return nil, fmt.Errorf("workload apiserver: decoding server CA certificate: %w", err)
	}
	caKey, err := certs.DecodePrivateKeyPEM(serverCAKey)
	if err != nil {
		return nil, fmt.Errorf("workload apiserver: decoding server CA key: %w", err)
	}
	// Checked here because kube-apiserver would only report a bad file by exiting.
	if _, err := certs.DecodeCertPEM(clientCACert); err != nil {
		return nil, fmt.Errorf("workload apiserver: decoding client CA certificate: %w", err)
	}
	assets := AssetsDir()
	if err := requireBinaries(assets, "etcd", "kube-apiserver"); err != nil {
		return nil, err
	}

	w, err := startWorkload(assets, opts, caCert, caKey, serverCACert, clientCACert)
	if errors.Is(err, errPortInUse) && opts.Port == 0 {
		// The port was free when picked but taken before a process bound it (another
		// test picking at the same moment): a fresh pick fixes that.
		w, err = startWorkload(assets, opts, caCert, caKey, serverCACert, clientCACert)
	}
	if err != nil {
		return nil, fmt.Errorf("workload apiserver: %w", err)
	}
	return w, nil
}

// startWorkload makes one attempt, on a freshly picked port.
func startWorkload(assets string, opts WorkloadOptions, caCert *x509.Certificate, caKey crypto.Signer, serverCACert, clientCACert []byte) (_ *WorkloadAPIServer, retErr error) {
	port := opts.Port
	if port == 0 {
		var err error
		if port, err = FreePort(); err != nil {
			return nil, fmt.Errorf("picking a port: %w", err)
		}
	}
	dir, err := os.MkdirTemp(opts.Dir, "capk3s-workload-")
	if err != nil {
		return nil, err
	}
	w := &WorkloadAPIServer{Host: workloadHost, Port: port, serverCACert: bytes.Clone(serverCACert), dir: dir}
	defer func() {
		if retErr != nil {
			retErr = errors.Join(retErr, w.Stop())
		}
	}()

	servingCert, err := w.writeFiles(caCert, caKey, clientCACert)
	if err != nil {
		return nil, err
	}
	if len(opts.RequestHeaderCA) > 0 {
		if err := os.WriteFile(filepath.Join(dir, requestCAFile), opts.RequestHeaderCA, 0o600); err != nil {
			return nil, err
		}
	}
	issuer := opts.Issuer
	if issuer == "" {
		issuer = w.Endpoint()
	}

	etcdURL, err := w.startEtcd(assets, opts.EtcdURL)
	if err != nil {
		return nil, err
	}

	apiLog, err := w.openLog("kube-apiserver.log")
	if err != nil {
		return nil, err
	}
	w.apiServer = &envtest.APIServer{
		Path:         filepath.Join(assets, "kube-apiserver"),
		CertDir:      dir,
		EtcdURL:      etcdURL,
		StartTimeout: workloadStartTimeout,
		Out:          apiLog,
		Err:          apiLog,
		SecureServing: envtest.SecureServing{
			// Both set, so envtest uses them instead of suggesting a port of its own.
			ListenAddr: envtest.ListenAddr{Address: workloadHost, Port: strconv.Itoa(port)},
			// What envtest would hand its own users as the CA to trust.
			CA:    w.serverCACert,
			Authn: &clientCAAuthn{caFile: filepath.Join(dir, clientCAFile)},
		},
	}
	// envtest's defaults point these at files it writes only when it generates the
	// serving certificate itself, which it skips because apiserver.crt exists.
	w.apiServer.Configure().
		Set("tls-cert-file", filepath.Join(dir, servingCertFile)).
		Set("tls-private-key-file", filepath.Join(dir, servingKeyFile)).
		Set("service-account-key-file", filepath.Join(dir, saPublicFile)).
		Set("service-account-signing-key-file", filepath.Join(dir, saPrivateFile)).
		Set("service-account-issuer", issuer).
		// k3s's default service CIDR, so that the kubernetes Service gets the address
		// a k3s cluster gives it (10.43.0.1).
		Set("service-cluster-ip-range", "10.43.0.0/16")
	if len(opts.RequestHeaderCA) > 0 {
		// No allowed names: any certificate the CA signed may assert a user.
		w.apiServer.Configure().
			Set("requestheader-client-ca-file", filepath.Join(dir, requestCAFile)).
			Set("requestheader-username-headers", "X-Remote-User").
			Set("requestheader-group-headers", "X-Remote-Group").
			Set("requestheader-extra-headers-prefix", "X-Remote-Extra-")
	}
	if err := w.apiServer.Start(); err != nil {
		return nil, startError("kube-apiserver", apiLog, err)
	}
	if err := w.waitReady(servingCert); err != nil {
		return nil, startError("kube-apiserver", apiLog, err)
	}
	return w, nil
}

// startEtcd starts the server's own etcd, unless given one to use.
func (w *WorkloadAPIServer) startEtcd(assets, given string) (*url.URL, error) {
	if given != "" {
		u, err := url.Parse(given)
		if err != nil {
			return nil, fmt.Errorf("etcd URL: %w", err)
		}
		return u, nil
	}
	etcdLog, err := w.openLog("etcd.log")
	if err != nil {
		return nil, err
	}
	w.etcd = &envtest.Etcd{
		Path:         filepath.Join(assets, "etcd"),
		DataDir:      filepath.Join(w.dir, "etcd"),
		StartTimeout: workloadStartTimeout,
		Out:          etcdLog,
		Err:          etcdLog,
	}
	if err := w.etcd.Start(); err != nil {
		return nil, startError("etcd", etcdLog, err)
	}
	return w.etcd.URL, nil
}

// writeFiles writes what kube-apiserver reads at start: a serving certificate signed
// by the server CA, the client CA, and a service-account key pair. It returns the
// serving certificate, by which waitReady recognises this server.
func (w *WorkloadAPIServer) writeFiles(caCert *x509.Certificate, caKey crypto.Signer, clientCACert []byte) (*x509.Certificate, error) {
	servingKey, err := certs.NewPrivateKey()
	if err != nil {
		return nil, err
	}
	servingConfig := certs.Config{
		CommonName: "kube-apiserver",
		AltNames: certs.AltNames{
			DNSNames: []string{"localhost"},
			IPs:      []net.IP{net.ParseIP(workloadHost)},
		},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	servingCert, err := servingConfig.NewSignedCert(servingKey, caCert, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing the serving certificate: %w", err)
	}
	saKey, err := certs.NewPrivateKey()
	if err != nil {
		return nil, err
	}
	saPublic, err := certs.EncodePublicKeyPEM(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		servingCertFile: certs.EncodeCertPEM(servingCert),
		servingKeyFile:  certs.EncodePrivateKeyPEM(servingKey),
		clientCAFile:    clientCACert,
		saPublicFile:    saPublic,
		saPrivateFile:   certs.EncodePrivateKeyPEM(saKey),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(w.dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return servingCert, nil
}

// openLog creates a log file that Stop closes. Files rather than pipes, so that a
// process never blocks on output nobody reads, and so that errors can quote them.
func (w *WorkloadAPIServer) openLog(name string) (*os.File, error) {
	f, err := os.Create(filepath.Join(w.dir, name))
	if err != nil {
		return nil, err
	}
	w.logs = append(w.logs, f)
	return f, nil
}

// waitReady waits for /readyz, so that the first request of a test does not race the
// apiserver's post-start hooks. envtest's own check (/healthz, certificate not
// verified) would also pass against another server that took the port; insisting on
// the serving certificate written for this server rules that out.
func (w *WorkloadAPIServer) waitReady(servingCert *x509.Certificate) error {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(w.serverCACert) {
		return errors.New("no certificate in the server CA PEM")
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 5 * time.Second}

	var lastErr error
	err := Eventually(context.Background(), workloadReadyTimeout, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.Endpoint()+"/readyz", http.NoBody)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
				return false, fmt.Errorf("%w: another server answers on %s: %w", errPortInUse, w.Endpoint(), err)
			}
			lastErr = err
			return false, nil
		}
		_ = resp.Body.Close()
		if peer := resp.TLS.PeerCertificates; len(peer) == 0 || !peer[0].Equal(servingCert) {
			return false, fmt.Errorf("%w: another server signed by the same CA answers on %s", errPortInUse, w.Endpoint())
		}
		lastErr = fmt.Errorf("/readyz: %s", resp.Status)
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s/readyz: %w", w.Endpoint(), errors.Join(err, lastErr))
	}
	return nil
}

// startError describes a process that did not come up, quoting the end of its log,
// and marks it errPortInUse when the log says that is why.
func startError(name string, log *os.File, err error) error {
	out, readErr := os.ReadFile(log.Name())
	if readErr != nil {
		return fmt.Errorf("starting %s: %w (log unreadable: %w)", name, err, readErr)
	}
	if len(out) > logTailBytes {
		out = out[len(out)-logTailBytes:]
	}
	tail := strings.TrimSpace(string(out))
	if !errors.Is(err, errPortInUse) && strings.Contains(tail, "address already in use") {
		err = fmt.Errorf("%w: %w", errPortInUse, err)
	}
	return fmt.Errorf("starting %s: %w; end of its log:\n%s", name, err, tail)
}

// FreePort asks the kernel for an unused port on 127.0.0.1. It is free only until
// someone else takes it, hence the retry on errPortInUse.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(workloadHost, "0"))
	if err != nil {
		return 0, err
	}
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.Join(fmt.Errorf("unexpected listener address %v", l.Addr()), l.Close())
	}
	return addr.Port, l.Close()
}

// Endpoint is the apiserver's URL, as a Cluster's control plane endpoint would give it.
func (w *WorkloadAPIServer) Endpoint() string {
	return "https://" + net.JoinHostPort(w.Host, strconv.Itoa(w.Port))
}

// Stop ends kube-apiserver and etcd, waiting for both to exit, and removes their
// files. Calling it again returns the first call's result.
func (w *WorkloadAPIServer) Stop() error {
	w.stopOnce.Do(func() {
		var errs []error
		// The apiserver first: it would spend its shutdown retrying a stopped etcd.
		if w.apiServer != nil {
			if err := w.apiServer.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("stopping kube-apiserver: %w", err))
			}
		}
		if w.etcd != nil {
			if err := w.etcd.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("stopping etcd: %w", err))
			}
		}
		for _, f := range w.logs {
			errs = append(errs, f.Close())
		}
		errs = append(errs, os.RemoveAll(w.dir))
		w.stopErr = errors.Join(errs...)
	})
	return w.stopErr
}

// AdminConfig returns a rest.Config authenticated with a fresh client certificate
// (O=system:masters) signed by the given client CA key, for tests to create Nodes and
// the like. It trusts only the server CA, as the control plane's kubeconfig does.
func (w *WorkloadAPIServer) AdminConfig(clientCACert, clientCAKey []byte) (*rest.Config, error) {
	caCert, err := certs.DecodeCertPEM(clientCACert)
	if err != nil {
		return nil, fmt.Errorf("decoding client CA certificate: %w", err)
	}
	caKey, err := certs.DecodePrivateKeyPEM(clientCAKey)
	if err != nil {
		return nil, fmt.Errorf("decoding client CA key: %w", err)
	}
	key, err := certs.NewPrivateKey()
	if err != nil {
		return nil, err
	}
	cfg := certs.Config{
		CommonName:   "capk3s-test-admin",
		Organization: []string{"system:masters"},
		Usages:       []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	cert, err := cfg.NewSignedCert(key, caCert, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing the admin client certificate: %w", err)
	}
	return &rest.Config{
		Host: w.Endpoint(),
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   bytes.Clone(w.serverCACert),
			CertData: certs.EncodeCertPEM(cert),
			KeyData:  certs.EncodePrivateKeyPEM(key),
		},
	}, nil
}

// clientCAAuthn makes envtest's APIServer trust the cluster's client CA. envtest's
// default Authn sets --client-ca-file to a CA of its own making, overriding any value
// given through Configure, so replacing the Authn is the only way to choose the CA.
type clientCAAuthn struct {
	caFile string
}

var _ envtest.Authn = &clientCAAuthn{}

// Configure points --client-ca-file at the cluster's client CA.
func (a *clientCAAuthn) Configure(_ string, args *envtest.Arguments) error {
	args.Set("client-ca-file", a.caFile)
	return nil
}

// Start does nothing: the file was written before the apiserver was configured.
func (a *clientCAAuthn) Start() error { return nil }

// AddUser fails: users of a workload cluster hold certificates signed by the client
// CA's key, which the apiserver never has. Use AdminConfig with that key instead.
func (a *clientCAAuthn) AddUser(envtest.User, *rest.Config) (*rest.Config, error) {
	return nil, errors.New("workload apiserver users are client certificates signed by the cluster's client CA: use AdminConfig")
}

// Stop does nothing: Stop of the WorkloadAPIServer removes the file.
func (a *clientCAAuthn) Stop() error { return nil }
