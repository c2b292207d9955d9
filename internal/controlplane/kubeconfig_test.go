package controlplane

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"maps"
	"math/big"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/ownerref"
	"github.com/capk3s/capk3s/test/envtest"
)

var testEndpoint = clusterv1.APIEndpoint{Host: "k3s.example.com", Port: 6443}

// setupKubeconfigTest creates a Cluster with endpoint, its control plane and the
// cluster CAs.
func setupKubeconfigTest(t *testing.T, endpoint clusterv1.APIEndpoint) (string, *clusterv1.Cluster, *controlplanev1.KThreesControlPlane, *Reconciler, *envtest.CountingClient) {
	t.Helper()
	ns := env.NewNamespace(t)
	cluster, kcp := createStepTestCluster(t, ns, endpoint)
	r, counter := countingReconciler(t)
	if _, err := r.reconcileCertificates(context.Background(), cluster, kcp, r.passSecrets(cluster), r.startedCheck(context.Background(), cluster, kcp)); err != nil {
		t.Fatalf("reconcileCertificates: %v", err)
	}
	counter.Reset()
	return ns, cluster, kcp, r, counter
}

// kubeconfigPass runs the kubeconfig step with the CA Secrets as they are now, as a
// pass does right after the certificates step.
func kubeconfigPass(ctx context.Context, r *Reconciler, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane) error {
	secrets, err := readCASecrets(ctx, r, cluster)
	if err != nil {
		return err
	}
	return r.reconcileKubeconfig(ctx, cluster, kcp, r.passSecrets(cluster), secrets)
}

// readCASecrets reads the server and client CA Secrets that exist.
func readCASecrets(ctx context.Context, r *Reconciler, cluster *clusterv1.Cluster) (caSecrets, error) {
	secrets := caSecrets{}
	for _, purpose := range []secret.Purpose{secret.ClusterCA, k3s.ClientCA} {
		s := &corev1.Secret{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: secret.Name(cluster.Name, purpose)}, s)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		secrets[purpose] = s
	}
	return secrets, nil
}

func loadKubeconfig(t *testing.T, s *corev1.Secret) *clientcmdapi.Config {
	t.Helper()
	cfg, err := clientcmd.Load(s.Data[secret.KubeconfigDataName])
	if err != nil {
		t.Fatalf("kubeconfig does not parse: %v", err)
	}
	return cfg
}

// onlyUser returns the kubeconfig's single user.
func onlyUser(t *testing.T, cfg *clientcmdapi.Config) *clientcmdapi.AuthInfo {
	t.Helper()
	if len(cfg.AuthInfos) != 1 {
		t.Fatalf("kubeconfig has %d users, want 1", len(cfg.AuthInfos))
	}
	for _, u := range cfg.AuthInfos {
		return u
	}
	return nil
}

func clientCertOf(t *testing.T, cfg *clientcmdapi.Config) *x509.Certificate {
	t.Helper()
	crt, err := certs.DecodeCertPEM(onlyUser(t, cfg).ClientCertificateData)
	if err != nil {
		t.Fatalf("client certificate: %v", err)
	}
	return crt
}

func certPool(t *testing.T, pemData []byte) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		t.Fatal("no certificate in PEM data")
	}
	return pool
}

func verifiesClientCert(crt *x509.Certificate, roots *x509.CertPool) error {
	_, err := crt.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return err
}

func TestReconcileKubeconfigSplitsClientAndServerCA(t *testing.T) {
	ctx := context.Background()
	ns, cluster, kcp, r, counter := setupKubeconfigTest(t, testEndpoint)

	if err := kubeconfigPass(ctx, r, cluster, kcp); err != nil {
		t.Fatalf("reconcileKubeconfig: %v", err)
	}
	s := getSecret(t, ns, "c1-kubeconfig")
	if s.Type != clusterv1.ClusterSecretType || s.Labels[clusterv1.ClusterNameLabel] != "c1" {
		t.Errorf("Secret type %q labels %v, want CAPI's type and the cluster-name label", s.Type, s.Labels)
	}
	if ok, err := ownerref.IsControlledBy(s, kcp, env.Scheme); err != nil || !ok {
		t.Errorf("owners %+v, want the KThreesControlPlane as controller", s.OwnerReferences)
	}

	cfg := loadKubeconfig(t, s)
	serverCA := getSecret(t, ns, "c1-ca").Data[secret.TLSCrtDataName]
	clientCA := getSecret(t, ns, "c1-cca").Data[secret.TLSCrtDataName]
	entry := cfg.Clusters["c1"]
	if entry == nil {
		t.Fatalf("no cluster c1 in kubeconfig: %v", slices.Collect(maps.Keys(cfg.Clusters)))
	}
	if entry.Server != "https://k3s.example.com:6443" {
		t.Errorf("server %q, want https://k3s.example.com:6443", entry.Server)
	}
	if !bytes.Equal(entry.CertificateAuthorityData, serverCA) {
		t.Errorf("kubeconfig trusts something else than the server CA")
	}
	crt := clientCertOf(t, cfg)
	if err := verifiesClientCert(crt, certPool(t, clientCA)); err != nil {
		t.Errorf("client certificate does not verify against the client CA: %v", err)
	}
	if err := verifiesClientCert(crt, certPool(t, serverCA)); err == nil {
		t.Errorf("client certificate verifies against the server CA; k3s would reject it")
	}
	if !slices.Equal(crt.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("client certificate organization %v, want [system:masters]", crt.Subject.Organization)
	}
	// The client key is ECDSA (k3s.ClientKeyAlgorithm), cheap to make.
	if key, err := certs.DecodePrivateKeyPEM(onlyUser(t, cfg).ClientKeyData); err != nil {
		t.Errorf("client key: %v", err)
	} else if _, isECDSA := key.(*ecdsa.PrivateKey); !isECDSA {
		t.Errorf("client key is %T, want an ECDSA key", key)
	}
	if _, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig(); err != nil {
		t.Errorf("kubeconfig is not usable by client-go: %v", err)
	}

	counter.Reset()
	if err := kubeconfigPass(ctx, r, cluster, kcp); err != nil {
		t.Fatalf("second reconcileKubeconfig: %v", err)
	}
	if got := counter.Writes(); got != 0 {
		t.Errorf("second pass wrote %d times (%v), want none", got, counter.Counts())
	}
}

func TestReconcileKubeconfigIPv6Endpoint(t *testing.T) {
	ns, cluster, kcp, r, _ := setupKubeconfigTest(t, clusterv1.APIEndpoint{Host: "fd00::1", Port: 6443})
	if err := kubeconfigPass(context.Background(), r, cluster, kcp); err != nil {
		t.Fatalf("reconcileKubeconfig: %v", err)
	}
	if got := loadKubeconfig(t, getSecret(t, ns, "c1-kubeconfig")).Clusters["c1"].Server; got != "https://[fd00::1]:6443" {
		t.Errorf("server %q, want https://[fd00::1]:6443", got)
	}
}

func TestReconcileKubeconfigWaitsForEndpoint(t *testing.T) {
	ns, cluster, kcp, r, counter := setupKubeconfigTest(t, clusterv1.APIEndpoint{})
	if err := kubeconfigPass(context.Background(), r, cluster, kcp); err != nil {
		t.Fatalf("reconcileKubeconfig: %v", err)
	}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "c1-kubeconfig"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("kubeconfig Secret made without an endpoint (Get = %v)", err)
	}
	if got := counter.Writes(); got != 0 {
		t.Errorf("wrote %d times, want none", got)
	}
}

func TestReconcileKubeconfigWithoutCAsFails(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster, kcp := createStepTestCluster(t, ns, testEndpoint)
	r, counter := countingReconciler(t)
	if err := kubeconfigPass(context.Background(), r, cluster, kcp); err == nil {
		t.Fatal("reconcileKubeconfig succeeded without CAs")
	}
	if got := counter.Writes(); got != 0 {
		t.Errorf("wrote %d times, want none", got)
	}
}

// replaceClientCert puts into the kubeconfig Secret a client certificate from
// the client CA that expires at notAfter, with a key of its own.
func replaceClientCert(t *testing.T, ns string, notAfter time.Time) *corev1.Secret {
	t.Helper()
	ca := getSecret(t, ns, "c1-cca")
	caCert, err := certs.DecodeCertPEM(ca.Data[secret.TLSCrtDataName])
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := certs.DecodePrivateKeyPEM(ca.Data[secret.TLSKeyDataName])
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(42),
		Subject:      pkix.Name{CommonName: "kubernetes-admin", Organization: []string{"system:masters"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := certs.EncodePrivateKeyPEMFromSigner(key)
	if err != nil {
		t.Fatal(err)
	}

	s := getSecret(t, ns, "c1-kubeconfig")
	cfg := loadKubeconfig(t, s)
	user := onlyUser(t, cfg)
	user.ClientCertificateData = pemCert(t, der)
	user.ClientKeyData = keyPEM
	if s.Data[secret.KubeconfigDataName], err = clientcmd.Write(*cfg); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

func pemCert(t *testing.T, der []byte) []byte {
	t.Helper()
	crt, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return certs.EncodeCertPEM(crt)
}

// The client certificate is renewed once less than kubeconfigRotationThreshold
// (half of its one-year life) is left, and not before.
func TestReconcileKubeconfigRotatesClientCertificate(t *testing.T) {
	day := 24 * time.Hour
	tests := []struct {
		name      string
		expiresIn time.Duration
		rotated   bool
	}{
		{"expires tomorrow", day, true},
		{"expires within the threshold", kubeconfigRotationThreshold - day, true},
		{"expires after the threshold", kubeconfigRotationThreshold + 7*day, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			ns, cluster, kcp, r, counter := setupKubeconfigTest(t, testEndpoint)
			if err := kubeconfigPass(ctx, r, cluster, kcp); err != nil {
				t.Fatalf("reconcileKubeconfig: %v", err)
			}
			planted := replaceClientCert(t, ns, time.Now().Add(tt.expiresIn))
			counter.Reset()

			if err := kubeconfigPass(ctx, r, cluster, kcp); err != nil {
				t.Fatalf("reconcileKubeconfig: %v", err)
			}
			s := getSecret(t, ns, "c1-kubeconfig")
			if !tt.rotated {
				if counter.Writes() != 0 || !bytes.Equal(s.Data[secret.KubeconfigDataName], planted.Data[secret.KubeconfigDataName]) {
					t.Fatalf("a certificate with %s left was replaced (writes %v)", tt.expiresIn, counter.Counts())
				}
				return
			}
			if got := counter.Writes(); got != 1 {
				t.Errorf("writes %v, want one", counter.Counts())
			}
			crt := clientCertOf(t, loadKubeconfig(t, s))
			if left := time.Until(crt.NotAfter); left < 360*day {
				t.Errorf("new client certificate expires in %s, want about a year", left.Round(time.Hour))
			}
			if err := verifiesClientCert(crt, certPool(t, getSecret(t, ns, "c1-cca").Data[secret.TLSCrtDataName])); err != nil {
				t.Errorf("new client certificate does not verify against the client CA: %v", err)
			}
			if ok, err := ownerref.IsControlledBy(s, kcp, env.Scheme); err != nil || !ok {
				t.Errorf("owners %+v, want the KThreesControlPlane as controller", s.OwnerReferences)
			}
		})
	}
}

// A kubeconfig that no longer fits the cluster is regenerated.
func TestReconcileKubeconfigRegeneratesWhenOutdated(t *testing.T) {
	replaceCA := func(t *testing.T, ns, name string) {
		t.Helper()
		s := getSecret(t, ns, name)
		s.Data = caData(newCAKeyPair(t))
		if err := env.Client.Update(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	setValue := func(value string) func(*testing.T, string) {
		return func(t *testing.T, ns string) {
			t.Helper()
			s := getSecret(t, ns, "c1-kubeconfig")
			s.Data[secret.KubeconfigDataName] = []byte(value)
			if err := env.Client.Update(context.Background(), s); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name   string
		change func(t *testing.T, ns string)
	}{
		{"server CA replaced", func(t *testing.T, ns string) { replaceCA(t, ns, "c1-ca") }},
		{"client CA replaced", func(t *testing.T, ns string) { replaceCA(t, ns, "c1-cca") }},
		{"value is not a kubeconfig", setValue("{not: [a kubeconfig")},
		{"value is empty", setValue("")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			ns, cluster, kcp, r, counter := setupKubeconfigTest(t, testEndpoint)
			if err := kubeconfigPass(ctx, r, cluster, kcp); err != nil {
				t.Fatalf("reconcileKubeconfig: %v", err)
			}
			tt.change(t, ns)
			counter.Reset()

			if err := kubeconfigPass(ctx, r, cluster, kcp); err != nil {
				t.Fatalf("reconcileKubeconfig: %v", err)
			}
			if got := counter.Writes(); got != 1 {
				t.Errorf("writes %v, want one", counter.Counts())
			}
			cfg := loadKubeconfig(t, getSecret(t, ns, "c1-kubeconfig"))
			if !bytes.Equal(cfg.Clusters["c1"].CertificateAuthorityData, getSecret(t, ns, "c1-ca").Data[secret.TLSCrtDataName]) {
				t.Errorf("regenerated kubeconfig does not trust the current server CA")
			}
			if err := verifiesClientCert(clientCertOf(t, cfg), certPool(t, getSecret(t, ns, "c1-cca").Data[secret.TLSCrtDataName])); err != nil {
				t.Errorf("regenerated client certificate does not verify against the current client CA: %v", err)
			}

			counter.Reset()
			if err := kubeconfigPass(ctx, r, cluster, kcp); err != nil {
				t.Fatalf("reconcileKubeconfig: %v", err)
			}
			if got := counter.Writes(); got != 0 {
				t.Errorf("pass after regeneration wrote %d times, want none", got)
			}
		})
	}
}

// cluster-api-k3s wrote its kubeconfig Secrets without a type (Opaque) and with
// a v1beta1 controller reference; a usable one is taken over with one patch and
// its kubeconfig kept byte for byte.
func TestReconcileKubeconfigTakesOverClusterAPIK3sSecret(t *testing.T) {
	ctx := context.Background()
	ns, cluster, kcp, r, counter := setupKubeconfigTest(t, testEndpoint)
	secrets, err := readCASecrets(ctx, r, cluster)
	if err != nil {
		t.Fatal(err)
	}
	cas, err := kubeconfigCAsFrom(secrets[secret.ClusterCA], secrets[k3s.ClientCA])
	if err != nil {
		t.Fatal(err)
	}
	data, err := cas.newKubeconfig("c1", "https://k3s.example.com:6443")
	if err != nil {
		t.Fatal(err)
	}
	clusterRef := metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cluster.Name, UID: cluster.UID}
	old := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: "c1-kubeconfig",
			OwnerReferences: []metav1.OwnerReference{clusterRef, {
				APIVersion: "controlplane.cluster.x-k8s.io/v1beta1", Kind: "KThreesControlPlane", Name: kcp.Name, UID: kcp.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Data: map[string][]byte{secret.KubeconfigDataName: data},
	}
	if err := env.Client.Create(ctx, old); err != nil {
		t.Fatal(err)
	}
	counter.Reset()

	if err := kubeconfigPass(ctx, r, cluster, kcp); err != nil {
		t.Fatalf("reconcileKubeconfig: %v", err)
	}
	if counter.Count(envtest.VerbPatch) != 1 || counter.Writes() != 1 {
		t.Errorf("writes %v, want one patch", counter.Counts())
	}
	s := getSecret(t, ns, "c1-kubeconfig")
	if ref := metav1.GetControllerOf(s); ref == nil || ref.APIVersion != controlplanev1.GroupVersion.String() || ref.UID != kcp.UID {
		t.Errorf("controller %+v, want the KThreesControlPlane at %s", ref, controlplanev1.GroupVersion)
	}
	if !hasOwner(s.OwnerReferences, clusterRef) {
		t.Errorf("Cluster owner lost: %+v", s.OwnerReferences)
	}
	if !bytes.Equal(s.Data[secret.KubeconfigDataName], data) {
		t.Errorf("a usable kubeconfig was rewritten")
	}

	counter.Reset()
	if err := kubeconfigPass(ctx, r, cluster, kcp); err != nil {
		t.Fatalf("reconcileKubeconfig: %v", err)
	}
	if got := counter.Writes(); got != 0 {
		t.Errorf("pass after take-over wrote %d times, want none", got)
	}
}

// A kubeconfig Secret the user made (no CAPI type, no reference to a control
// plane) is neither taken over nor rewritten, as with KCP.
func TestReconcileKubeconfigLeavesUserSecretAlone(t *testing.T) {
	ctx := context.Background()
	ns, cluster, kcp, r, counter := setupKubeconfigTest(t, testEndpoint)
	user := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1-kubeconfig"},
		Data:       map[string][]byte{secret.KubeconfigDataName: []byte("the user's own")},
	}
	if err := env.Client.Create(ctx, user); err != nil {
		t.Fatal(err)
	}
	counter.Reset()

	if err := kubeconfigPass(ctx, r, cluster, kcp); err != nil {
		t.Fatalf("reconcileKubeconfig: %v", err)
	}
	if got := counter.Writes(); got != 0 {
		t.Errorf("wrote %d times (%v), want none", got, counter.Counts())
	}
	if s := getSecret(t, ns, "c1-kubeconfig"); s.ResourceVersion != user.ResourceVersion {
		t.Errorf("the user's kubeconfig Secret was changed")
	}
}
