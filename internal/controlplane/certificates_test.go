package controlplane

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/cluster-api/util/test/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/ownerref"
	"github.com/capk3s/capk3s/test/envtest"
)

// createStepTestCluster creates a Cluster "c1" with the given endpoint and its
// KThreesControlPlane, for tests that call one reconcile step directly. The
// control plane is not owned by the Cluster on purpose: a manager that another
// test of the package runs meanwhile then leaves it alone.
func createStepTestCluster(t *testing.T, ns string, endpoint clusterv1.APIEndpoint) (*clusterv1.Cluster, *controlplanev1.KThreesControlPlane) {
	t.Helper()
	ctx := context.Background()
	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"},
		Spec: clusterv1.ClusterSpec{
			ControlPlaneEndpoint: endpoint,
			ControlPlaneRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: controlplanev1.GroupVersion.Group, Kind: "KThreesControlPlane", Name: "c1-cp",
			},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureClusterKind, Name: "c1",
			},
		},
	}
	if err := env.Client.Create(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	kcp := &controlplanev1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1-cp",
			Labels: map[string]string{clusterv1.ClusterNameLabel: "c1"}},
		Spec: controlplanev1.KThreesControlPlaneSpec{
			Replicas: ptr.To[int32](1),
			Version:  "v1.31.4+k3s1",
			MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{
				Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineTemplateKind, Name: "t",
					},
				},
			},
		},
	}
	if err := env.Client.Create(ctx, kcp); err != nil {
		t.Fatal(err)
	}
	return cluster, kcp
}

func countingReconciler(t *testing.T) (*Reconciler, *envtest.CountingClient) {
	t.Helper()
	c, err := env.NewCountingClient()
	if err != nil {
		t.Fatal(err)
	}
	return &Reconciler{Client: c}, c
}

func getSecret(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatalf("reading Secret %s: %v", name, err)
	}
	return s
}

// newCAKeyPair makes a CA the way CAPI's util/secret does.
func newCAKeyPair(t *testing.T) *certs.KeyPair {
	t.Helper()
	c := &secret.Certificate{Purpose: secret.ClusterCA}
	if err := c.Generate(); err != nil {
		t.Fatal(err)
	}
	return c.KeyPair
}

func createCASecret(t *testing.T, ns, name string, typ corev1.SecretType, data map[string][]byte, owners ...metav1.OwnerReference) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name,
			Labels:          map[string]string{clusterv1.ClusterNameLabel: "c1"},
			OwnerReferences: owners,
		},
		Type: typ,
		Data: data,
	}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

func caData(kp *certs.KeyPair) map[string][]byte {
	return map[string][]byte{secret.TLSCrtDataName: kp.Cert, secret.TLSKeyDataName: kp.Key}
}

func caSecretNames() []string {
	var names []string
	for _, c := range k3s.ClusterCertificates() {
		names = append(names, secret.Name("c1", c.Purpose))
	}
	return names
}

func requireCondition(t *testing.T, kcp *controlplanev1.KThreesControlPlane, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	c := conditions.Get(kcp, controlplanev1.CertificatesAvailableCondition)
	if c == nil || c.Status != status || c.Reason != reason {
		t.Fatalf("CertificatesAvailable = %+v, want %s/%s", c, status, reason)
	}
	return c
}

func TestReconcileCertificatesCreatesControlledCAs(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster, kcp := createStepTestCluster(t, ns, clusterv1.APIEndpoint{})
	r, counter := countingReconciler(t)

	if _, err := r.reconcileCertificates(ctx, cluster, kcp, r.passSecrets(cluster), r.startedCheck(ctx, cluster, kcp)); err != nil {
		t.Fatalf("reconcileCertificates: %v", err)
	}
	requireCondition(t, kcp, metav1.ConditionTrue, certificatesAvailableReason)
	if got := counter.Count(envtest.VerbCreate); got != 3 {
		t.Errorf("creates = %d, want 3 (one per CA)", got)
	}

	seen := map[string]string{}
	for _, name := range caSecretNames() {
		s := getSecret(t, ns, name)
		if ok, err := ownerref.IsControlledBy(s, kcp, env.Scheme); err != nil || !ok {
			t.Errorf("%s: owners %+v, want the KThreesControlPlane as controller", name, s.OwnerReferences)
		}
		if s.Labels[clusterv1.ClusterNameLabel] != "c1" {
			t.Errorf("%s: labels %v, want the cluster-name label", name, s.Labels)
		}
		if s.Type != clusterv1.ClusterSecretType {
			t.Errorf("%s: type %q, want %q", name, s.Type, clusterv1.ClusterSecretType)
		}
		crt, err := certs.DecodeCertPEM(s.Data[secret.TLSCrtDataName])
		if err != nil || !crt.IsCA {
			t.Errorf("%s: tls.crt is not a CA certificate (%v)", name, err)
		}
		if _, err := certs.DecodePrivateKeyPEM(s.Data[secret.TLSKeyDataName]); err != nil {
			t.Errorf("%s: tls.key: %v", name, err)
		}
		// k3s keeps its CAs apart: three Secrets holding one CA would let any
		// client certificate pass as a server's.
		if other, dup := seen[string(s.Data[secret.TLSCrtDataName])]; dup {
			t.Errorf("%s holds the same CA as %s", name, other)
		}
		seen[string(s.Data[secret.TLSCrtDataName])] = name
	}

	counter.Reset()
	if _, err := r.reconcileCertificates(ctx, cluster, kcp, r.passSecrets(cluster), r.startedCheck(ctx, cluster, kcp)); err != nil {
		t.Fatalf("second reconcileCertificates: %v", err)
	}
	if got := counter.Writes(); got != 0 {
		t.Errorf("second pass wrote %d times (%v), want none", got, counter.Counts())
	}
	requireCondition(t, kcp, metav1.ConditionTrue, certificatesAvailableReason)
}

// CA Secrets that the first server's bootstrap (owned by the Cluster) or
// cluster-api-k3s (owned by a KThreesConfig, or by the control plane without
// controller) made are taken over with their contents untouched.
func TestReconcileCertificatesTakesOverProviderSecrets(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster, kcp := createStepTestCluster(t, ns, clusterv1.APIEndpoint{})
	clusterRef := metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cluster.Name, UID: cluster.UID}
	configRef := metav1.OwnerReference{
		APIVersion: "bootstrap.cluster.x-k8s.io/v1beta1", Kind: "KThreesConfig", Name: "c1-cp-abcde", UID: "config-uid",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
	kcpPlainRef := metav1.OwnerReference{
		APIVersion: "controlplane.cluster.x-k8s.io/v1beta1", Kind: "KThreesControlPlane", Name: kcp.Name, UID: kcp.UID,
	}
	before := map[string]*corev1.Secret{
		"c1-ca":   createCASecret(t, ns, "c1-ca", clusterv1.ClusterSecretType, caData(newCAKeyPair(t)), clusterRef),
		"c1-cca":  createCASecret(t, ns, "c1-cca", clusterv1.ClusterSecretType, caData(newCAKeyPair(t)), configRef),
		"c1-etcd": createCASecret(t, ns, "c1-etcd", clusterv1.ClusterSecretType, caData(newCAKeyPair(t)), kcpPlainRef),
	}
	r, counter := countingReconciler(t)

	if _, err := r.reconcileCertificates(ctx, cluster, kcp, r.passSecrets(cluster), r.startedCheck(ctx, cluster, kcp)); err != nil {
		t.Fatalf("reconcileCertificates: %v", err)
	}
	requireCondition(t, kcp, metav1.ConditionTrue, certificatesAvailableReason)
	if got, want := counter.Count(envtest.VerbPatch), 3; got != want || counter.Writes() != want {
		t.Errorf("writes %v, want exactly %d patches", counter.Counts(), want)
	}
	for name, old := range before {
		s := getSecret(t, ns, name)
		if ok, err := ownerref.IsControlledBy(s, kcp, env.Scheme); err != nil || !ok {
			t.Errorf("%s: owners %+v, want the KThreesControlPlane as controller", name, s.OwnerReferences)
		}
		for _, key := range []string{secret.TLSCrtDataName, secret.TLSKeyDataName} {
			if !bytes.Equal(s.Data[key], old.Data[key]) {
				t.Errorf("%s: %s changed", name, key)
			}
		}
		for _, ref := range s.OwnerReferences {
			if ref.Kind == "KThreesConfig" {
				t.Errorf("%s: still references KThreesConfig %s, whose deletion would delete the CA", name, ref.Name)
			}
		}
	}
	if refs := getSecret(t, ns, "c1-ca").OwnerReferences; !hasOwner(refs, clusterRef) {
		t.Errorf("c1-ca lost its Cluster owner: %+v", refs)
	}

	counter.Reset()
	if _, err := r.reconcileCertificates(ctx, cluster, kcp, r.passSecrets(cluster), r.startedCheck(ctx, cluster, kcp)); err != nil {
		t.Fatalf("second reconcileCertificates: %v", err)
	}
	if got := counter.Writes(); got != 0 {
		t.Errorf("second pass wrote %d times (%v), want none", got, counter.Counts())
	}
}

func hasOwner(refs []metav1.OwnerReference, want metav1.OwnerReference) bool {
	for _, ref := range refs {
		if ref.Kind == want.Kind && ref.Name == want.Name && ref.UID == want.UID && !ptr.Deref(ref.Controller, false) {
			return true
		}
	}
	return false
}

// A CA the user provided (kubernetes.io/tls, as CAPI's book shows) is used as
// it is and not taken over: deleting the cluster must not delete it.
func TestReconcileCertificatesLeavesUserCAsAlone(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster, kcp := createStepTestCluster(t, ns, clusterv1.APIEndpoint{})
	user := createCASecret(t, ns, "c1-ca", corev1.SecretTypeTLS, caData(newCAKeyPair(t)))
	r, _ := countingReconciler(t)

	if _, err := r.reconcileCertificates(ctx, cluster, kcp, r.passSecrets(cluster), r.startedCheck(ctx, cluster, kcp)); err != nil {
		t.Fatalf("reconcileCertificates: %v", err)
	}
	requireCondition(t, kcp, metav1.ConditionTrue, certificatesAvailableReason)
	got := getSecret(t, ns, "c1-ca")
	if len(got.OwnerReferences) != 0 || got.ResourceVersion != user.ResourceVersion {
		t.Errorf("the user's CA Secret was changed: owners %+v", got.OwnerReferences)
	}
}

// k3s servers sign with their CAs, so CAPI's "external CA" (a certificate
// without its key) cannot work. It is reported on the condition and returned
// as errCertificatesUnusable, which stops the pass; the other CAs are still
// created, and the Secret, being the user's, is not taken over.
func TestReconcileCertificatesCAWithoutKey(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster, kcp := createStepTestCluster(t, ns, clusterv1.APIEndpoint{})
	kp := newCAKeyPair(t)
	createCASecret(t, ns, "c1-ca", corev1.SecretTypeOpaque, map[string][]byte{secret.TLSCrtDataName: kp.Cert})
	r, _ := countingReconciler(t)

	_, err := r.reconcileCertificates(ctx, cluster, kcp, r.passSecrets(cluster), r.startedCheck(ctx, cluster, kcp))
	if !errors.Is(err, errCertificatesUnusable) {
		t.Fatalf("reconcileCertificates = %v, want errCertificatesUnusable", err)
	}
	c := requireCondition(t, kcp, metav1.ConditionFalse, certificatesNotAvailableReason)
	if want := "Secret c1-ca has no tls.key; k3s servers need the CA key"; c.Message != want {
		t.Errorf("message %q, want %q", c.Message, want)
	}
	if strings.Contains(c.Message+err.Error(), "-----BEGIN") {
		t.Errorf("condition or error carries PEM data")
	}
	for _, name := range []string{"c1-cca", "c1-etcd"} {
		getSecret(t, ns, name)
	}
	if refs := getSecret(t, ns, "c1-ca").OwnerReferences; len(refs) != 0 {
		t.Errorf("the user's CA Secret was taken over: %+v", refs)
	}
}

// Once servers run, they hold the CAs they were given; a CA made now would be
// trusted by none of them. So a lost CA Secret is reported, not replaced.
func TestReconcileCertificatesDoesNotReplaceLostCAAfterInitialization(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster, kcp := createStepTestCluster(t, ns, clusterv1.APIEndpoint{})
	kcp.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	createCASecret(t, ns, "c1-ca", clusterv1.ClusterSecretType, caData(newCAKeyPair(t)))
	createCASecret(t, ns, "c1-etcd", clusterv1.ClusterSecretType, caData(newCAKeyPair(t)))
	r, counter := countingReconciler(t)

	_, err := r.reconcileCertificates(ctx, cluster, kcp, r.passSecrets(cluster), r.startedCheck(ctx, cluster, kcp))
	if !errors.Is(err, errCertificatesUnusable) {
		t.Fatalf("reconcileCertificates = %v, want errCertificatesUnusable", err)
	}
	c := requireCondition(t, kcp, metav1.ConditionFalse, certificatesNotAvailableReason)
	if !strings.Contains(c.Message, "Secret c1-cca does not exist") {
		t.Errorf("message %q does not name the lost Secret", c.Message)
	}
	if n := counter.Count(envtest.VerbCreate); n != 0 {
		t.Errorf("%d Secrets created after initialization", n)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c1-cca"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("c1-cca was recreated (Get = %v)", err)
	}
}

// caProblem needs no apiserver; certificates are ECDSA so that the table is quick.
func TestCAProblem(t *testing.T) {
	now := time.Now()
	caPEM, caKeyPEM := testCA(t, now.Add(time.Hour), true)
	expiredPEM, expiredKeyPEM := testCA(t, now.Add(-time.Hour), true)
	leafPEM, leafKeyPEM := testCA(t, now.Add(time.Hour), false)
	_, otherKeyPEM := testCA(t, now.Add(time.Hour), true)

	tests := []struct {
		name string
		data map[string][]byte
		want string
	}{
		{"usable", map[string][]byte{"tls.crt": caPEM, "tls.key": caKeyPEM}, ""},
		{"no certificate", map[string][]byte{"tls.key": caKeyPEM}, "Secret x-ca has no tls.crt"},
		{"certificate not PEM", map[string][]byte{"tls.crt": []byte("garbage"), "tls.key": caKeyPEM}, "Secret x-ca: tls.crt is not a PEM-encoded certificate"},
		{"not a CA", map[string][]byte{"tls.crt": leafPEM, "tls.key": leafKeyPEM}, "Secret x-ca: tls.crt is not a CA certificate"},
		{"expired", map[string][]byte{"tls.crt": expiredPEM, "tls.key": expiredKeyPEM}, "Secret x-ca: the CA certificate expired at "},
		{"no key", map[string][]byte{"tls.crt": caPEM}, "Secret x-ca has no tls.key; k3s servers need the CA key"},
		{"key not PEM", map[string][]byte{"tls.crt": caPEM, "tls.key": []byte("garbage")}, "Secret x-ca: tls.key is not a PEM-encoded private key"},
		{"key of another certificate", map[string][]byte{"tls.crt": caPEM, "tls.key": otherKeyPEM}, "Secret x-ca: tls.key is not the key of the certificate in tls.crt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := caProblem(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x-ca"}, Data: tt.data}, now)
			if (tt.want == "") != (got == "") || !strings.HasPrefix(got, tt.want) {
				t.Errorf("caProblem = %q, want %q", got, tt.want)
			}
		})
	}
}

// testCA returns a self-signed certificate valid until notAfter and its ECDSA
// key, both PEM-encoded.
func testCA(t *testing.T, notAfter time.Time, isCA bool) (crtPEM, keyPEM []byte) {
	t.Helper()
	return testCANamed(t, "test", notAfter, isCA)
}

// testCAWithSubject is a CA certificate named CN=<cn>, valid until notAfter.
func testCAWithSubject(t *testing.T, cn string, notAfter time.Time) (crtPEM, keyPEM []byte) {
	t.Helper()
	return testCANamed(t, cn, notAfter, true)
}

func testCANamed(t *testing.T, cn string, notAfter time.Time, isCA bool) (crtPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             notAfter.Add(-48 * time.Hour),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  isCA,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	crt, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	if keyPEM, err = certs.EncodePrivateKeyPEMFromSigner(key); err != nil {
		t.Fatal(err)
	}
	return certs.EncodeCertPEM(crt), keyPEM
}

// The decision to create a missing CA does not rest on the controller's copy of
// the status alone: a stale copy that says "not initialized" is checked against
// the apiserver, and a server that was given bootstrap data (which embeds the
// CAs) holds them even when no status says so. Either way the lost CA is
// reported, naming why, and nothing is generated.
func TestReconcileCertificatesDoesNotReplaceACAServersMayHold(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, ns string, kcp *controlplanev1.KThreesControlPlane)
		why   string
	}{
		{
			name: "the cached status is stale; the live one says initialized",
			setup: func(t *testing.T, _ string, kcp *controlplanev1.KThreesControlPlane) {
				live := kcp.DeepCopy()
				live.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
				if err := env.Client.Status().Update(context.Background(), live); err != nil {
					t.Fatal(err)
				}
			},
			why: "the KThreesControlPlane's status says it is initialized",
		},
		{
			name: "no status says initialized, but a server has bootstrap data",
			setup: func(t *testing.T, ns string, _ *controlplanev1.KThreesControlPlane) {
				m := &clusterv1.Machine{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1-cp-first",
						Labels: map[string]string{clusterv1.ClusterNameLabel: "c1", clusterv1.MachineControlPlaneLabel: ""}},
					Spec: clusterv1.MachineSpec{
						ClusterName: "c1",
						Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To("c1-cp-first")},
						InfrastructureRef: clusterv1.ContractVersionedObjectReference{
							APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineKind, Name: "c1-cp-first",
						},
					},
				}
				if err := env.Client.Create(context.Background(), m); err != nil {
					t.Fatal(err)
				}
			},
			why: "Machine c1-cp-first has bootstrap data",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ns := env.NewNamespace(t)
			cluster, kcp := createStepTestCluster(t, ns, clusterv1.APIEndpoint{})
			stale := kcp.DeepCopy()
			tc.setup(t, ns, kcp)
			createCASecret(t, ns, "c1-ca", clusterv1.ClusterSecretType, caData(newCAKeyPair(t)))
			createCASecret(t, ns, "c1-etcd", clusterv1.ClusterSecretType, caData(newCAKeyPair(t)))
			r, counter := countingReconciler(t)
			r.APIReader = env.Client

			_, err := r.reconcileCertificates(ctx, cluster, stale, r.passSecrets(cluster), r.startedCheck(ctx, cluster, stale))
			if !errors.Is(err, errCertificatesUnusable) {
				t.Fatalf("reconcileCertificates = %v, want errCertificatesUnusable", err)
			}
			c := requireCondition(t, stale, metav1.ConditionFalse, certificatesNotAvailableReason)
			for _, want := range []string{"Secret c1-cca does not exist", tc.why, "restore it"} {
				if !strings.Contains(c.Message, want) {
					t.Errorf("message %q does not say %q", c.Message, want)
				}
			}
			if n := counter.Count(envtest.VerbCreate); n != 0 {
				t.Errorf("%d Secrets created while servers may hold the CAs", n)
			}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c1-cca"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
				t.Errorf("c1-cca was generated anew (Get = %v)", err)
			}
		})
	}
}

// A CA Secret of CAPI's type that other software controls (here a SealedSecret)
// is used as it is: not taken over, its controller not demoted.
func TestReconcileCertificatesLeavesExternallyControlledCAsAlone(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster, kcp := createStepTestCluster(t, ns, clusterv1.APIEndpoint{})
	sealed := metav1.OwnerReference{
		APIVersion: "bitnami.com/v1alpha1", Kind: "SealedSecret", Name: "c1-ca", UID: "5ea1ed00-0000-4000-8000-0000000000ca",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
	before := createCASecret(t, ns, "c1-ca", clusterv1.ClusterSecretType, caData(newCAKeyPair(t)), sealed)
	r, _ := countingReconciler(t)

	if _, err := r.reconcileCertificates(ctx, cluster, kcp, r.passSecrets(cluster), r.startedCheck(ctx, cluster, kcp)); err != nil {
		t.Fatalf("reconcileCertificates: %v", err)
	}
	requireCondition(t, kcp, metav1.ConditionTrue, certificatesAvailableReason)
	got := getSecret(t, ns, "c1-ca")
	if got.ResourceVersion != before.ResourceVersion || len(got.OwnerReferences) != 1 || !ptr.Deref(got.OwnerReferences[0].Controller, false) {
		t.Errorf("the SealedSecret's CA Secret was changed: owners %+v", got.OwnerReferences)
	}
}
