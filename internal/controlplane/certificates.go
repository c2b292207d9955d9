package controlplane

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/secret"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/ownerref"
)

// Reasons of the CertificatesAvailable condition. They are unexported because
// api/ defines none yet; the values follow CAPI's usual names.
const (
	// certificatesAvailableReason: all three CA Secrets exist and hold a usable
	// certificate and key.
	certificatesAvailableReason = "Available"
	// certificatesNotAvailableReason: a CA Secret is missing or unusable; the
	// message names the Secret and says what is wrong with it.
	certificatesNotAvailableReason = "NotAvailable"
	// certificatesReconcileFailedReason: an API error stopped the check, so
	// nothing is known about the CAs.
	certificatesReconcileFailedReason = "ReconcileFailed"
)

// errCertificatesUnusable is wrapped by reconcileCertificates' error when a CA
// Secret is missing or unusable. That is not transient: the user has to fix a
// Secret. It is still an error, so that the pass stops before anything that
// needs the CAs (a new server could not start) and so that backoff retries
// notice the fix even for a Secret whose changes do not wake the controller
// (a user-provided one, which is not taken over). Callers may test for it with
// errors.Is to log it more quietly or to run steps that need no CA.
var errCertificatesUnusable = errors.New("the cluster CAs are not usable")

// reconcileCertificates makes sure the three CAs every k3s server shares exist
// and are controlled by the control plane, and reports CertificatesAvailable.
//
// Missing CAs are created (CAPI's util/secret, controlled by kcp) only while no
// server can hold them: once one may (initguard.Started, the same check that
// guards the join token: the control plane is initialized, in the cached status
// or live, or a server has been given bootstrap data, which embeds the CAs), a
// new CA would be trusted by none of the servers, so a missing Secret is
// reported instead of replaced.
//
// Existing CA Secrets made by a provider (see ownerref.MadeByProvider: the first
// server's bootstrap makes them owned by the Cluster; cluster-api-k3s made them
// owned by a KThreesConfig or by the control plane without controller) are
// taken over, so that no machine's rollout can get them garbage collected.
// Other Secrets are the user's own CAs, or are controlled by other software
// (ownerref.ExternalController), and keep their owners, as with KCP: deleting
// the control plane must not delete them. Every CA, whoever made it,
// must carry its key, because k3s servers sign with it; CAPI's "external CA"
// (a certificate without key) does not work here.
//
// A Secret that is already right costs no write.
//
// secrets is the pass's reader of the cluster's Secrets (passSecrets). serversMayHoldCAs
// answers, with the evidence, whether a server may already hold the CAs
// (initguard.Started); it is asked only when a Secret is missing.
func (r *Reconciler) reconcileCertificates(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane,
	secrets client.Reader, serversMayHoldCAs func() (string, error)) (caSecrets, error) {
	log := ctrl.LoggerFrom(ctx)
	clusterKey := util.ObjectKey(cluster)
	owner := *metav1.NewControllerRef(kcp, controlplanev1.GroupVersion.WithKind("KThreesControlPlane"))

	// Each Secret is read here rather than through Certificates.LookupOrGenerate,
	// which reports a Secret without tls.crt and an API failure alike, as an
	// untyped error: the first needs a False condition naming the Secret, the
	// second an Unknown one and a retry. Generating and saving still use CAPI's
	// code, so new CAs are exactly what LookupOrGenerate would make.
	var problems []string
	now := time.Now()
	found := caSecrets{}
	for _, cert := range k3s.ClusterCertificates() {
		name := secret.Name(cluster.Name, cert.Purpose)
		s := &corev1.Secret{}
		err := secrets.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: name}, s)
		switch {
		case apierrors.IsNotFound(err):
			evidence, err := serversMayHoldCAs()
			if err != nil {
				return nil, certificatesFailed(kcp, fmt.Errorf("deciding whether CA Secret %s may be created: %w", name, err))
			}
			if evidence != "" {
				problems = append(problems, fmt.Sprintf("Secret %s does not exist, but servers already hold the CA it held (%s): "+
					"restore it (its certificate and key are on every server under %s); a new CA would not be trusted by them",
					name, evidence, k3s.ServerTLSDir))
				continue
			}
			// Only a new CA gets the lifetime asked for; an existing one is never
			// made again for it (the webhook keeps the field as it was created).
			cert.ValidityPeriodDays = kcp.Spec.CACertificateValidityPeriodDays
			if err := cert.Generate(); err != nil {
				return nil, certificatesFailed(kcp, fmt.Errorf("generating CA for Secret %s: %w", name, err))
			}
			// An AlreadyExists here means the first server's bootstrap created the
			// Secret meanwhile, or it is an unlabelled Secret too new for the pass's
			// reader to have seen (secretcache.ForPass); the retry reads that one, so
			// nothing is overwritten.
			if err := (secret.Certificates{cert}).SaveGenerated(ctx, r.Client, clusterKey, owner); err != nil {
				return nil, certificatesFailed(kcp, fmt.Errorf("creating CA Secret %s: %w", name, err))
			}
			log.Info("Created CA Secret", "Secret", klog.KObj(cert.Secret))
			found[cert.Purpose] = cert.Secret
			continue
		case err != nil:
			return nil, certificatesFailed(kcp, fmt.Errorf("reading CA Secret %s: %w", name, err))
		}

		if ownerref.MadeByProvider(s) {
			if err := r.takeOverSecret(ctx, s, kcp); err != nil {
				return nil, certificatesFailed(kcp, fmt.Errorf("taking over CA Secret %s: %w", name, err))
			}
		}
		if problem := caProblem(s, now); problem != "" {
			problems = append(problems, problem)
		}
		found[cert.Purpose] = s
	}

	if len(problems) > 0 {
		// Messages name Secrets and keys, never their contents.
		msg := strings.Join(problems, "; ")
		conditions.Set(kcp, metav1.Condition{
			Type:    controlplanev1.CertificatesAvailableCondition,
			Status:  metav1.ConditionFalse,
			Reason:  certificatesNotAvailableReason,
			Message: msg,
		})
		return nil, fmt.Errorf("%w: %s", errCertificatesUnusable, msg)
	}
	conditions.Set(kcp, metav1.Condition{
		Type:   controlplanev1.CertificatesAvailableCondition,
		Status: metav1.ConditionTrue,
		Reason: certificatesAvailableReason,
	})
	return found, nil
}

// caSecrets are the CA Secrets one pass read, by purpose, handed on to the steps
// that need them so that no pass reads a Secret twice (Secrets are read live).
type caSecrets map[secret.Purpose]*corev1.Secret

// certificatesFailed reports an error that says nothing about the CAs
// themselves (the API failed), so the condition is Unknown; the details, which
// may be long, go to the log with the returned error.
func certificatesFailed(kcp *controlplanev1.KThreesControlPlane, err error) error {
	conditions.Set(kcp, metav1.Condition{
		Type:    controlplanev1.CertificatesAvailableCondition,
		Status:  metav1.ConditionUnknown,
		Reason:  certificatesReconcileFailedReason,
		Message: "Failed to read or create the cluster CA Secrets; see the controller's log",
	})
	return err
}

// takeOverSecret makes kcp the controller of s (see ownerref.TakeOver) and patches
// only when the owner references change. The patch carries the
// resourceVersion, so a concurrent change to the Secret is never overwritten
// with the stale copy read earlier in this pass.
func (r *Reconciler) takeOverSecret(ctx context.Context, s *corev1.Secret, kcp *controlplanev1.KThreesControlPlane) error {
	original := s.DeepCopy()
	changed, err := ownerref.TakeOver(s, kcp, r.Client.Scheme())
	if err != nil || !changed {
		return err
	}
	if err := r.Client.Patch(ctx, s, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Took over Secret", "Secret", klog.KObj(s))
	return nil
}

// caProblem says, in a sentence fit for a condition message, why s cannot
// serve as a k3s CA, or returns "" when it can. It never quotes the data.
func caProblem(s *corev1.Secret, now time.Time) string {
	crtPEM := s.Data[secret.TLSCrtDataName]
	if len(crtPEM) == 0 {
		return fmt.Sprintf("Secret %s has no %s", s.Name, secret.TLSCrtDataName)
	}
	// The first certificate is the CA itself; any further ones (a bundle) are
	// only passed on to the servers.
	crt, err := certs.DecodeCertPEM(crtPEM)
	if err != nil {
		return fmt.Sprintf("Secret %s: %s is not a PEM-encoded certificate", s.Name, secret.TLSCrtDataName)
	}
	if !crt.IsCA {
		return fmt.Sprintf("Secret %s: %s is not a CA certificate", s.Name, secret.TLSCrtDataName)
	}
	if now.After(crt.NotAfter) {
		return fmt.Sprintf("Secret %s: the CA certificate expired at %s", s.Name, crt.NotAfter.UTC().Format(time.RFC3339))
	}
	if len(s.Data[secret.TLSKeyDataName]) == 0 {
		return fmt.Sprintf("Secret %s has no %s; k3s servers need the CA key", s.Name, secret.TLSKeyDataName)
	}
	key, err := certs.DecodePrivateKeyPEM(s.Data[secret.TLSKeyDataName])
	if err != nil {
		return fmt.Sprintf("Secret %s: %s is not a PEM-encoded private key", s.Name, secret.TLSKeyDataName)
	}
	// Every key type the standard library returns has Equal.
	if pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(crt.PublicKey) {
		return fmt.Sprintf("Secret %s: %s is not the key of the certificate in %s", s.Name, secret.TLSKeyDataName, secret.TLSCrtDataName)
	}
	return ""
}
