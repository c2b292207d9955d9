package bootstrap

import (
	"context"

	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/token"
)

// cachedSecretPurposes are the Secrets whose data the bootstrap manager's Secret cache
// keeps (named <cluster>-<purpose>): the ones clusterSecrets serves, the cluster's
// three CAs and its join token. A render reads nothing else through the cache; the
// user's Secrets are read live (userSecrets), and the cache holds every other
// cluster-labelled Secret, each machine's bootstrap data included, by its metadata
// alone.
func cachedSecretPurposes() []secret.Purpose {
	purposes := []secret.Purpose{token.Purpose}
	for _, c := range k3s.ClusterCertificates() {
		purposes = append(purposes, c.Purpose)
	}
	return purposes
}

// clusterSecrets reads the cluster Secrets every render reads (the CAs and the join
// token): through r.Secrets, a cache of cluster-labelled Secrets that confirms a
// NotFound live, or the client when the Reconciler was built without one (unit tests
// that call Reconcile directly). Both are immutable once they exist, so a cached copy
// is as good as a live one; only their absence is ever in doubt, and that is always
// asked of the API server.
func (r *Reconciler) clusterSecrets() client.Reader {
	if r.Secrets != nil {
		return r.Secrets
	}
	return r.Client
}

// readThroughClient is c whose reads go through reader: CAPI's certificate lookup
// takes a client.Client, which it reads with and creates missing CAs with.
type readThroughClient struct {
	client.Client
	reader client.Reader
}

func (c readThroughClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.reader.Get(ctx, key, obj, opts...)
}
