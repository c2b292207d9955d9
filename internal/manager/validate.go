package manager

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	logsv1 "k8s.io/component-base/logs/api/v1"
	"sigs.k8s.io/cluster-api/controllers/crdmigrator"
	"sigs.k8s.io/cluster-api/util/flags"
)

// leaderElectionJitter mirrors client-go's leaderelection.JitterFactor: the
// renew deadline must exceed the retry period scaled by it, or client-go
// refuses to start the elector.
const leaderElectionJitter = 1.2

// crdMigrationPhases are the phases of CAPI's CRD migrator that can be skipped.
var crdMigrationPhases = []string{string(crdmigrator.StorageVersionMigrationPhase), string(crdmigrator.CleanupManagedFieldsPhase)}

// Validate reports every invalid option at once, each error naming its flag,
// so a misconfigured Deployment fails fast with one readable message instead
// of a late error from deep inside controller-runtime.
func (o *Options) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if o.LeaderElect && o.LeaderElectionID == "" {
		add("leader election is enabled but no leader election ID was set")
	}
	if o.LeaderElectLeaseDuration <= o.LeaderElectRenewDeadline {
		add("--leader-elect-lease-duration (%s) must be greater than --leader-elect-renew-deadline (%s)",
			o.LeaderElectLeaseDuration, o.LeaderElectRenewDeadline)
	}
	if o.LeaderElectRetryPeriod <= 0 {
		add("--leader-elect-retry-period must be positive, got %s", o.LeaderElectRetryPeriod)
	} else if float64(o.LeaderElectRenewDeadline) <= leaderElectionJitter*float64(o.LeaderElectRetryPeriod) {
		add("--leader-elect-renew-deadline (%s) must be greater than %.1f times --leader-elect-retry-period (%s)",
			o.LeaderElectRenewDeadline, leaderElectionJitter, o.LeaderElectRetryPeriod)
	}

	if o.WatchNamespace != "" {
		if msgs := validation.IsDNS1123Label(o.WatchNamespace); len(msgs) > 0 {
			add("--namespace %q is not a valid namespace name: %s", o.WatchNamespace, strings.Join(msgs, "; "))
		}
	}
	if msgs := validation.IsValidLabelValue(o.WatchFilterValue); len(msgs) > 0 {
		add("--watch-filter %q is not a valid label value: %s", o.WatchFilterValue, strings.Join(msgs, "; "))
	}

	if o.WebhookPort < 1 || o.WebhookPort > 65535 {
		add("--webhook-port must be between 1 and 65535, got %d", o.WebhookPort)
	}

	if o.KubeAPIQPS <= 0 {
		add("--kube-api-qps must be greater than 0, got %v", o.KubeAPIQPS)
	}
	if o.KubeAPIBurst < 1 {
		add("--kube-api-burst must be at least 1, got %d", o.KubeAPIBurst)
	}
	if o.Concurrency < 1 {
		add("--concurrency must be at least 1, got %d", o.Concurrency)
	}
	// Zero is rejected too: it would silently turn periodic resyncs off.
	if o.SyncPeriod <= 0 {
		add("--sync-period must be positive, got %s", o.SyncPeriod)
	}
	if o.MinPassInterval < 0 {
		add("--min-pass-interval must not be negative (0 turns pacing off), got %s", o.MinPassInterval)
	}

	for _, phase := range o.SkipCRDMigrationPhases {
		if !slices.Contains(crdMigrationPhases, phase) {
			add("--skip-crd-migration-phases: %q is not a phase (%s)", phase, strings.Join(crdMigrationPhases, ", "))
		}
	}

	if _, _, err := flags.GetManagerOptions(o.Diagnostics); err != nil {
		add("invalid TLS or diagnostics flags: %w", err)
	}
	if o.Logs != nil {
		if err := logsv1.Validate(o.Logs, nil, field.NewPath("logging")).ToAggregate(); err != nil {
			add("invalid logging flags: %w", err)
		}
	}

	return errors.Join(errs...)
}
