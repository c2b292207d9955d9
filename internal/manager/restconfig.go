package manager

import "k8s.io/client-go/rest"

// RestConfig returns a copy of base carrying the client rate limits from o.
// It copies so that the caller's config, which client-go may share, is left alone.
func RestConfig(base *rest.Config, o Options) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.QPS = o.KubeAPIQPS
	cfg.Burst = o.KubeAPIBurst
	return cfg
}
