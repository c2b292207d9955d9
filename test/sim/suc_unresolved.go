package sim

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// setUnresolved writes the status SUC gives a Plan whose version it cannot resolve
// (k3smodel.ResolvePlanVersion): LatestResolved False, reason Error, and no Job.
func (s *sucStandIn) setUnresolved(ctx context.Context, plan *unstructured.Unstructured, why error) error {
	st := map[string]any{"conditions": []any{
		map[string]any{"type": "Validated", "status": "True", "reason": "PlanIsValid"},
		map[string]any{"type": "LatestResolved", "status": "False", "reason": "Error", "message": why.Error()},
	}}
	if sameJSON(plan.Object["status"], st) {
		return nil
	}
	plan.Object["status"] = st
	if err := s.c.Status().Update(ctx, plan); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("updating Plan %s's status: %w", plan.GetName(), err)
	}
	return nil
}
