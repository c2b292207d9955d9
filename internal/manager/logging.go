package manager

import (
	"fmt"

	logsv1 "k8s.io/component-base/logs/api/v1"
	// Registers the "json" value of --logging-format.
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
)

// applyLogging configures klog from the logging flags and routes
// controller-runtime's logger through it, so one set of flags governs all output.
func applyLogging(c *logsv1.LoggingConfiguration) error {
	// A nil feature gate makes component-base use its own defaults for the
	// logging gates; ours has none of them registered.
	if err := logsv1.ValidateAndApply(c, nil); err != nil {
		return fmt.Errorf("applying logging options: %w", err)
	}
	ctrl.SetLogger(klog.Background())
	return nil
}
