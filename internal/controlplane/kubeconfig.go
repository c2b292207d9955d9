package controlplane

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
	"sigs.k8s.io/cluster-api/util/secret"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/ownerref"
)

// kubeconfigRotationThreshold is how long before its client certificate expires
// the kubeconfig is regenerated. kubeconfig.New signs for certs.DefaultCertDuration
// (one year); like KCP, capk3s rotates once half of that is left
// (certs.ClientCertificateRenewalDuration, about six months). Rotating that early
// leaves months for copies of the kubeconfig taken out of the Secret to be
// replaced, and for a controller that was down for a while to catch up.
const kubeconfigRotationThreshold = certs.ClientCertificateRenewalDuration

// reconcileKubeconfig keeps the Secret "<cluster>-kubeconfig" (CAPI's shape:
// key "value", type cluster.x-k8s.io/secret, cluster-name label) controlled by
// kcp and usable: an admin kubeconfig (O=system:masters) for the cluster's
// endpoint.
//
// k3s, unlike kubeadm, splits its CAs: the API server presents a certificate
// of the server CA ("<cluster>-ca") and accepts client certificates of the
// client CA ("<cluster>-cca"). So the client certificate is signed by the
// client CA and the kubeconfig trusts the server CA.
//
// Nothing is done until the Cluster's control plane endpoint is set. An
// existing Secret that a provider made (ownerref.MadeByProvider: CAPI's type, or a
// reference to a KThreesControlPlane, as cluster-api-k3s left it) is taken
// over and regenerated when its client certificate is due for rotation or no
// longer fits the cluster (it does not parse, trusts another server CA, was
// signed by another client CA, points at another endpoint); a Secret the user
// provided is left alone, as KCP does. A Secret that is fine costs no write.
//
// It needs the CAs (cas, read by reconcileCertificates this pass), so it runs after
// reconcileCertificates; a missing or unusable CA is an error. secrets is the pass's
// reader of the cluster's Secrets (passSecrets).
func (r *Reconciler) reconcileKubeconfig(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane,
	secrets client.Reader, cas caSecrets) error {
	log := ctrl.LoggerFrom(ctx)
	endpoint := cluster.Spec.ControlPlaneEndpoint
	if !endpoint.IsValid() {
		// The infrastructure provider has not set it yet; setting it updates the
		// Cluster, which wakes the control plane.
		return nil
	}
	// String joins host and port so that an IPv6 host gets its brackets.
	server := "https://" + endpoint.String()
	clusterKey := util.ObjectKey(cluster)

	existing := &corev1.Secret{}
	err := secrets.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: secret.Name(cluster.Name, secret.Kubeconfig)}, existing)
	switch {
	case apierrors.IsNotFound(err):
		existing = nil
	case err != nil:
		return fmt.Errorf("reading kubeconfig Secret: %w", err)
	case !ownerref.MadeByProvider(existing):
		// The user's own kubeconfig: neither taken over nor rotated.
		return nil
	}

	parsed, err := kubeconfigCAsFrom(cas[secret.ClusterCA], cas[k3s.ClientCA])
	if err != nil {
		return err
	}

	if existing == nil {
		data, err := parsed.newKubeconfig(cluster.Name, server)
		if err != nil {
			return err
		}
		owner := *metav1.NewControllerRef(kcp, controlplanev1.GroupVersion.WithKind("KThreesControlPlane"))
		s := kubeconfig.GenerateSecretWithOwner(clusterKey, data, owner)
		// AlreadyExists (a user's unlabelled Secret too new for the pass's reader to
		// have seen: secretcache.ForPass) fails the pass; the retry reads that Secret.
		if err := r.Client.Create(ctx, s); err != nil {
			return fmt.Errorf("creating kubeconfig Secret: %w", err)
		}
		log.Info("Created kubeconfig Secret", "Secret", klog.KObj(s))
		return nil
	}

	original := existing.DeepCopy()
	tookOver, err := ownerref.TakeOver(existing, kcp, r.Client.Scheme())
	if err != nil {
		return fmt.Errorf("taking over kubeconfig Secret: %w", err)
	}
	why := parsed.kubeconfigOutdated(existing.Data[secret.KubeconfigDataName], cluster.Name, server, time.Now())
	if why != "" {
		data, err := parsed.newKubeconfig(cluster.Name, server)
		if err != nil {
			return err
		}
		if existing.Data == nil {
			existing.Data = map[string][]byte{}
		}
		existing.Data[secret.KubeconfigDataName] = data
	}
	if !tookOver && why == "" {
		return nil
	}
	// One patch for both changes; the resourceVersion it carries keeps a
	// concurrent writer's change from being overwritten with this stale copy.
	if err := r.Client.Patch(ctx, existing, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating kubeconfig Secret: %w", err)
	}
	if tookOver {
		log.Info("Took over kubeconfig Secret", "Secret", klog.KObj(existing))
	}
	if why != "" {
		log.Info("Regenerated kubeconfig Secret", "Secret", klog.KObj(existing), "reason", why)
	}
	return nil
}

// kubeconfigCAs are what a kubeconfig is made and checked with.
type kubeconfigCAs struct {
	// serverCAPEM is the server CA Secret's tls.crt as stored: the kubeconfig
	// trusts exactly what the servers were given, a bundle included.
	serverCAPEM []byte
	serverCAs   []*x509.Certificate
	clientCA    *x509.Certificate
	clientCAKey crypto.Signer
}

// kubeconfigCAsFrom parses the server and client CA Secrets that the certificates
// step read this pass.
func kubeconfigCAsFrom(serverCA, clientCA *corev1.Secret) (*kubeconfigCAs, error) {
	if serverCA == nil || clientCA == nil {
		return nil, fmt.Errorf("%w: the server or client CA Secret is missing", errCertificatesUnusable)
	}
	var err error
	cas := &kubeconfigCAs{serverCAPEM: serverCA.Data[secret.TLSCrtDataName]}
	// Errors name the Secret and the key only: parse errors could otherwise
	// carry fragments of the data into logs.
	if cas.serverCAs, err = certutil.ParseCertsPEM(cas.serverCAPEM); err != nil {
		return nil, fmt.Errorf("%w: Secret %s: %s holds no PEM certificate", errCertificatesUnusable, serverCA.Name, secret.TLSCrtDataName)
	}
	if cas.clientCA, err = certs.DecodeCertPEM(clientCA.Data[secret.TLSCrtDataName]); err != nil {
		return nil, fmt.Errorf("%w: Secret %s: %s holds no PEM certificate", errCertificatesUnusable, clientCA.Name, secret.TLSCrtDataName)
	}
	if cas.clientCAKey, err = certs.DecodePrivateKeyPEM(clientCA.Data[secret.TLSKeyDataName]); err != nil {
		return nil, fmt.Errorf("%w: Secret %s: %s holds no PEM private key", errCertificatesUnusable, clientCA.Name, secret.TLSKeyDataName)
	}
	return cas, nil
}

// newKubeconfig returns a serialized admin kubeconfig with a fresh client key
// and certificate.
func (cas *kubeconfigCAs) newKubeconfig(clusterName, server string) ([]byte, error) {
	cfg, err := kubeconfig.New(clusterName, server, cas.clientCA, cas.clientCAKey, kubeconfig.KeyEncryptionAlgorithm(k3s.ClientKeyAlgorithm))
	if err != nil {
		return nil, fmt.Errorf("generating kubeconfig: %w", err)
	}
	// kubeconfig.New trusts the CA that signed the client certificate, which is
	// right for kubeadm's single CA but not for k3s: its API server's
	// certificate comes from the server CA, so that is what the kubeconfig must
	// trust.
	cfg.Clusters[clusterName].CertificateAuthorityData = cas.serverCAPEM
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("serializing kubeconfig: %w", err)
	}
	return data, nil
}

// kubeconfigOutdated says why data must be regenerated, or returns "" when it
// is a usable kubeconfig for server that trusts the current server CA and
// whose client certificates come from the current client CA and are not due
// for rotation (the rule of kubeconfig.NeedsClientCertRotation).
func (cas *kubeconfigCAs) kubeconfigOutdated(data []byte, clusterName, server string, now time.Time) string {
	if len(data) == 0 {
		return "no kubeconfig in the Secret"
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return "the kubeconfig does not parse"
	}
	cluster := cfg.Clusters[clusterName]
	if cluster == nil {
		return fmt.Sprintf("the kubeconfig has no cluster %q", clusterName)
	}
	if cluster.Server != server {
		return fmt.Sprintf("the kubeconfig points at %s, the endpoint is %s", cluster.Server, server)
	}
	if !sameCertificates(cluster.CertificateAuthorityData, cas.serverCAs) {
		// After the server CA changed, a kubeconfig trusting the old one fails.
		return "the kubeconfig does not trust the current server CA"
	}
	if len(cfg.AuthInfos) == 0 {
		return "the kubeconfig has no user"
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.AuthInfos)) {
		user := cfg.AuthInfos[name]
		crt, err := certs.DecodeCertPEM(user.ClientCertificateData)
		if err != nil {
			return fmt.Sprintf("user %q has no client certificate", name)
		}
		if crt.CheckSignatureFrom(cas.clientCA) != nil {
			return fmt.Sprintf("the client certificate of user %q is not signed by the current client CA", name)
		}
		if crt.NotAfter.Sub(now) < kubeconfigRotationThreshold {
			return fmt.Sprintf("the client certificate of user %q expires at %s", name, crt.NotAfter.UTC().Format(time.RFC3339))
		}
		key, err := certs.DecodePrivateKeyPEM(user.ClientKeyData)
		if err != nil {
			return fmt.Sprintf("user %q has no client key", name)
		}
		if pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(crt.PublicKey) {
			return fmt.Sprintf("the client key of user %q does not match its certificate", name)
		}
	}
	return ""
}

// sameCertificates compares certificates, not bytes, so that a kubeconfig
// written by other code (cluster-api-k3s re-encoded the CA) is not rewritten
// for a difference in PEM whitespace alone.
func sameCertificates(pemData []byte, want []*x509.Certificate) bool {
	got, err := certutil.ParseCertsPEM(pemData)
	if err != nil || len(got) != len(want) {
		return false
	}
	for i := range got {
		if !bytes.Equal(got[i].Raw, want[i].Raw) {
			return false
		}
	}
	return true
}
