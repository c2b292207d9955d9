package controlplane

import (
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/token"
)

// CachedSecretPurposes are the Secrets whose data the control plane's Secret cache
// keeps (named <cluster>-<purpose>): the ones a pass reads through passSecrets, the
// cluster's three CAs, its join token and its kubeconfig. The cache holds every other
// cluster-labelled Secret, each machine's bootstrap data included, by its metadata
// alone; recovering a lost token from a server's bootstrap data reads it live.
func CachedSecretPurposes() []secret.Purpose {
	purposes := []secret.Purpose{token.Purpose, secret.Kubeconfig}
	for _, c := range k3s.ClusterCertificates() {
		purposes = append(purposes, c.Purpose)
	}
	return purposes
}

// passSecrets reads the cluster's Secrets for one pass: through a PassReader of
// r.Secrets (per pass, so it is not kept on the Reconciler, which concurrent passes
// share), or the client when the Reconciler was built without one (unit tests that
// call Reconcile directly).
func (r *Reconciler) passSecrets(cluster *clusterv1.Cluster) client.Reader {
	if r.Secrets != nil {
		return r.Secrets.ForPass(client.ObjectKeyFromObject(cluster))
	}
	return r.Client
}
