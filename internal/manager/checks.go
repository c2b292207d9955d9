package manager

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// addChecks wires the probes the Deployment uses. Readiness waits for the
// webhook server because the API server calls it as soon as the Pod is Ready.
func addChecks(mgr ctrl.Manager) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding healthz check: %w", err)
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return fmt.Errorf("adding readyz check: %w", err)
	}
	return nil
}
