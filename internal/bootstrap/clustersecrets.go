package bootstrap

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
