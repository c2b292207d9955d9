package manager

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/cluster-api/util/flags"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// ManagerOptions translates o into controller-runtime manager options. It
// touches no cluster, so the whole mapping from flags is unit testable.
func (o *Options) ManagerOptions(scheme *runtime.Scheme) (ctrl.Options, error) {
	tlsOpts, metricsOpts, err := flags.GetManagerOptions(o.Diagnostics)
	if err != nil {
		return ctrl.Options{}, fmt.Errorf("building diagnostics options: %w", err)
	}

	return ctrl.Options{
		Scheme: scheme,

		LeaderElection:   o.LeaderElect,
		LeaderElectionID: o.leaderElectionID(),
		// Left empty, controller-runtime reads the Pod's namespace from its service
		// account mount.
		LeaderElectionNamespace: o.LeaderElectNamespace,
		LeaseDuration:           ptr.To(o.LeaderElectLeaseDuration),
		RenewDeadline:           ptr.To(o.LeaderElectRenewDeadline),
		RetryPeriod:             ptr.To(o.LeaderElectRetryPeriod),

		HealthProbeBindAddress: o.HealthAddr,
		Metrics:                *metricsOpts,

		Cache:  o.cacheOptions(),
		Client: clientOptions(),

		// Setting the default here means reconcilers get --concurrency without
		// having to thread it through each SetupWithManager.
		Controller: config.Controller{MaxConcurrentReconciles: o.Concurrency},

		WebhookServer: webhook.NewServer(webhook.Options{
			Port:     o.WebhookPort,
			CertDir:  o.WebhookCertDir,
			CertName: o.WebhookCertName,
			KeyName:  o.WebhookKeyName,
			TLSOpts:  tlsOpts,
		}),
	}, nil
}

func (o *Options) cacheOptions() cache.Options {
	opts := cache.Options{
		SyncPeriod: ptr.To(o.SyncPeriod),
		// Managed fields are never read by the reconcilers and are a large
		// share of each cached object, so CAPI drops them too.
		DefaultTransform: cache.TransformStripManagedFields(),
	}
	if o.WatchNamespace != "" {
		opts.DefaultNamespaces = map[string]cache.Config{o.WatchNamespace: {}}
	}
	return opts
}

// clientOptions are CAPI's own manager client options: Secrets and ConfigMaps are
// read live (caching them would keep every Secret of the management cluster in memory
// and need cluster-wide list/watch), and unstructured objects (infrastructure
// machines) come from the cache like typed ones, so reading them every pass is cheap.
func clientOptions() client.Options {
	return setup.ManagerClientOptions()
}
