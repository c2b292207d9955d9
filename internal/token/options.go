package token

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Option tunes Reconcile.
type Option func(*options)

type options struct {
	live client.Reader
}

// WithLiveReader makes Reconcile confirm through r, an uncached reader such as the
// manager's API reader, that no server may hold the token before it generates a new
// one (see initguard.Started). Controllers read the control plane from a cache that
// may lag behind; a lagging copy must not let a token lost right after
// initialization be replaced.
func WithLiveReader(r client.Reader) Option {
	return func(o *options) { o.live = r }
}
