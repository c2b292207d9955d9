package token

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Option tunes Reconcile.
type Option func(*options)

type options struct {
	live    client.Reader
	secrets client.Reader
	started func() (string, error)
}

// secretReader is where the existing Secret is read from: the one given with
// WithSecretReader, or the client.
func (o options) secretReader(c client.Client) client.Reader {
	if o.secrets != nil {
		return o.secrets
	}
	return c
}

// WithSecretReader makes Reconcile read the existing token Secret through r (a
// Secret cache whose NotFound is safe to create on, such as secretcache.Reader or a
// pass's secretcache.PassReader), instead of the client. A Secret that exists after
// all makes the create fail with AlreadyExists, and Reconcile then adopts it.
func WithSecretReader(r client.Reader) Option {
	return func(o *options) { o.secrets = r }
}

// WithLiveReader makes Reconcile confirm through r, an uncached reader such as the
// manager's API reader, that no server may hold the token before it generates a new
// one (see initguard.Started). Controllers read the control plane from a cache that
// may lag behind; a lagging copy must not let a token lost right after
// initialization be replaced.
func WithLiveReader(r client.Reader) Option {
	return func(o *options) { o.live = r }
}

// WithStartedCheck makes Reconcile ask started, instead of initguard.Started, whether a
// server may already hold the token. A controller that also creates the cluster's CAs
// in the same pass hands both steps one check (answered once), so that the pass reads
// the Cluster, the control plane and their Machines and configs live only once.
func WithStartedCheck(started func() (evidence string, err error)) Option {
	return func(o *options) { o.started = started }
}
