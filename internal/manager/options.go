package manager

import (
	"time"

	"k8s.io/component-base/featuregate"
	logsv1 "k8s.io/component-base/logs/api/v1"
	"sigs.k8s.io/cluster-api/util/flags"
)

// Defaults match the ones used by the Cluster API providers so that
// operators can configure capk3s the same way as the rest of their stack.
const (
	defaultLeaseDuration  = 15 * time.Second
	defaultRenewDeadline  = 10 * time.Second
	defaultRetryPeriod    = 2 * time.Second
	defaultHealthAddr     = ":9440"
	defaultWebhookPort    = 9443
	defaultWebhookCertDir = "/tmp/k8s-webhook-server/serving-certs/"
	defaultWebhookCert    = "tls.crt"
	defaultWebhookKey     = "tls.key"
	defaultKubeAPIQPS     = 100
	defaultKubeAPIBurst   = 200
	defaultConcurrency    = 10
	defaultSyncPeriod     = 10 * time.Minute
	// defaultLogVerbosity follows CAPI, whose managers log at -v=2 unless told otherwise.
	defaultLogVerbosity = 2
)

// Options are the settings of a manager binary. Most fields are bound to
// command line flags by AddFlags; LeaderElectionID is not, because each
// binary needs its own fixed lease name that users must not change by accident.
type Options struct {
	// LeaderElectionID names the Lease the replicas of one binary compete for; a
	// shard (--watch-filter) appends its filter value (leaderelection.go).
	LeaderElectionID string

	LeaderElect              bool
	LeaderElectLeaseDuration time.Duration
	LeaderElectRenewDeadline time.Duration
	LeaderElectRetryPeriod   time.Duration
	// LeaderElectNamespace holds the Lease; "" is the Pod's own namespace, which only
	// exists in a Pod: a manager run elsewhere (on a workstation, as a test's child
	// process) must be told.
	LeaderElectNamespace string

	// WatchNamespace restricts the cache to one namespace; empty means all.
	WatchNamespace string
	// WatchFilterValue is handed to CAPI's predicates by the reconcilers so that
	// several provider instances can share a management cluster.
	WatchFilterValue string

	HealthAddr      string
	WebhookPort     int
	WebhookCertDir  string
	WebhookCertName string
	WebhookKeyName  string

	KubeAPIQPS   float32
	KubeAPIBurst int

	// Concurrency is the default number of concurrent reconciles per controller.
	Concurrency int
	SyncPeriod  time.Duration
	// MinPassInterval paces each reconciler: at most one pass per object per interval
	// (internal/pacing). 0 is off. The mains hand it to the reconcilers they set up.
	MinPassInterval time.Duration

	// SkipCRDMigrationPhases are phases of the CRD migration (internal/crdmigration)
	// this manager does not run: StorageVersionMigration, CleanupManagedFields.
	SkipCRDMigrationPhases []string

	// FeatureGates backs --feature-gates. Features register their gates on it
	// before AddFlags is called, because registering closes it for additions.
	FeatureGates featuregate.MutableFeatureGate

	// Diagnostics carries CAPI's metrics/diagnostics endpoint and TLS flags.
	Diagnostics flags.ManagerOptions

	// Logs carries the component-base logging flags (-v, --logging-format, ...).
	Logs *logsv1.LoggingConfiguration
}
