package manager

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsv1 "k8s.io/component-base/logs/api/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/flags"
)

// AddFlags registers the manager flags on fs, with defaults written into o.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	if o.Logs == nil {
		o.Logs = logs.NewOptions()
		o.Logs.Verbosity = defaultLogVerbosity
	}
	logsv1.AddFlags(o.Logs, fs)

	// CAPI also defaults this to false and turns it on in its Deployment
	// manifests, so running the binary locally never blocks on a Lease.
	fs.BoolVar(&o.LeaderElect, "leader-elect", false,
		"Enable leader election, so that only one replica of the manager is active at a time.")
	fs.DurationVar(&o.LeaderElectLeaseDuration, "leader-elect-lease-duration", defaultLeaseDuration,
		"Interval at which non-leader candidates will wait to force acquire leadership (duration string).")
	fs.DurationVar(&o.LeaderElectRenewDeadline, "leader-elect-renew-deadline", defaultRenewDeadline,
		"Duration that the leading manager will retry refreshing leadership before giving up (duration string).")
	fs.DurationVar(&o.LeaderElectRetryPeriod, "leader-elect-retry-period", defaultRetryPeriod,
		"Duration the leader election clients should wait between tries of actions (duration string).")
	fs.StringVar(&o.LeaderElectNamespace, "leader-elect-namespace", "",
		"Namespace of the leader election Lease. If unspecified, the namespace of the manager's Pod; required to elect a leader outside a Pod.")

	fs.StringVar(&o.WatchNamespace, "namespace", "",
		"Namespace that the manager watches to reconcile cluster-api objects. If unspecified, all namespaces are watched.")
	fs.StringVar(&o.WatchFilterValue, "watch-filter", "",
		fmt.Sprintf("Label value that the manager watches to reconcile cluster-api objects. The label key is always %s. If unspecified, all objects are reconciled.", clusterv1.WatchLabel))

	fs.StringVar(&o.HealthAddr, "health-addr", defaultHealthAddr,
		"The address the health endpoint binds to.")

	fs.IntVar(&o.WebhookPort, "webhook-port", defaultWebhookPort,
		"Webhook server port.")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", defaultWebhookCertDir,
		"Directory holding the webhook server's serving certificate and key.")
	fs.StringVar(&o.WebhookCertName, "webhook-cert-name", defaultWebhookCert,
		"Webhook serving certificate file name, inside --webhook-cert-dir.")
	fs.StringVar(&o.WebhookKeyName, "webhook-key-name", defaultWebhookKey,
		"Webhook serving key file name, inside --webhook-cert-dir.")

	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", defaultKubeAPIQPS,
		"Maximum queries per second from the manager's client to the Kubernetes API server.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", defaultKubeAPIBurst,
		"Maximum number of queries allowed in one burst from the manager's client to the Kubernetes API server.")

	fs.IntVar(&o.Concurrency, "concurrency", defaultConcurrency,
		"Number of objects each controller reconciles concurrently.")
	fs.DurationVar(&o.SyncPeriod, "sync-period", defaultSyncPeriod,
		"The minimum interval at which watched resources are reconciled (e.g. 15m).")
	fs.DurationVar(&o.MinPassInterval, "min-pass-interval", 0,
		"Minimum time between the starts of two reconciles of the same object (e.g. 1s): a request that comes sooner waits, and the events that arrive meanwhile share one reconcile. 0 (the default) turns this off.")

	fs.StringSliceVar(&o.SkipCRDMigrationPhases, "skip-crd-migration-phases", nil,
		"CRD migration phases not to run (StorageVersionMigration, CleanupManagedFields), as with CAPI's managers. By default both run, so that objects stored at an older API version are rewritten at the current one.")

	if o.FeatureGates == nil {
		// No gates are registered here: each feature that needs one adds it
		// to this gate before AddFlags runs.
		o.FeatureGates = featuregate.NewFeatureGate()
	}
	o.FeatureGates.AddFlag(fs)

	flags.AddManagerOptions(fs, &o.Diagnostics)
}
