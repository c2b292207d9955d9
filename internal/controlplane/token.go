package controlplane

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/token"
)

// reconcileToken runs on every pass, not only at creation, so that token Secrets
// made by older software are taken over and a lost token is noticed. It reports
// TokenAvailable; available=false must stop any scale-up, since new machines could
// not join.
//
// secrets is the pass's reader of the cluster's Secrets (passSecrets);
// serversMayHoldToken is the pass's one check whether a server may already hold the
// cluster's secrets (shared with reconcileCertificates).
func (r *Reconciler) reconcileToken(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane,
	secrets client.Reader, serversMayHoldToken func() (string, error)) (available bool, err error) {
	log := ctrl.LoggerFrom(ctx)
	opts := []token.Option{token.WithStartedCheck(serversMayHoldToken)}
	if r.APIReader != nil {
		opts = append(opts, token.WithLiveReader(r.APIReader))
	}
	opts = append(opts, token.WithSecretReader(secrets))
	result, err := token.Reconcile(ctx, r.Client, cluster, kcp, opts...)
	if err != nil {
		conditions.Set(kcp, metav1.Condition{
			Type:    controlplanev1.TokenAvailableCondition,
			Status:  metav1.ConditionUnknown,
			Reason:  controlplanev1.TokenReconcileFailedReason,
			Message: "Failed to reconcile the join token Secret; see the controller's log",
		})
		return false, err
	}
	// A Secret managed by other software stays so pass after pass; the condition
	// tells it, the log would only repeat it.
	if result.Outcome != token.Unchanged && result.Outcome != token.ManagedExternally {
		// Outcome and message never contain the token itself.
		log.Info("Reconciled join token Secret", "outcome", result.Outcome, "message", result.Message)
	}
	// The condition follows this pass's outcome alone; a recovery is told once, in
	// the log line above and the Recovered reason of the pass that made it.
	c := metav1.Condition{
		Type:   controlplanev1.TokenAvailableCondition,
		Status: metav1.ConditionTrue,
		Reason: controlplanev1.TokenAvailableReason,
	}
	switch result.Outcome {
	case token.Lost:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, controlplanev1.TokenLostReason, result.Message
	case token.Recovered:
		c.Reason, c.Message = controlplanev1.TokenRecoveredReason, result.Message
	case token.ManagedExternally:
		// True: the value is there and machines join with it; the reason tells that
		// this control plane neither owns nor writes the Secret.
		c.Reason, c.Message = controlplanev1.TokenManagedExternallyReason, result.Message
	case token.ManagedExternallyWithoutValue:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, controlplanev1.TokenManagedExternallyReason, result.Message
	}
	conditions.Set(kcp, c)
	return result.Available(), nil
}
