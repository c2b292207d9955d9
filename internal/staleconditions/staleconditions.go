package staleconditions

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Object is what a controller patches conditions on.
type Object interface {
	client.Object
	conditions.Setter
}

// Stale lists the condition types to remove from a list that a controller setting
// only owned (and Paused, which every capk3s controller sets) writes.
func Stale(list []metav1.Condition, owned []string) []string {
	var stale []string
	for _, c := range list {
		if c.Reason == "" || (c.Type != clusterv1.PausedCondition && !slices.Contains(owned, c.Type)) {
			stale = append(stale, c.Type)
		}
	}
	return stale
}

// Drop removes obj's stale conditions in a status patch of their own, before the
// pass writes anything; it writes nothing when there are none, so it costs an idle
// object nothing. obj then holds the conditions written (its resourceVersion is still
// the one read: a later patch of the pass resolves that, as CAPI's patch helper does).
func Drop(ctx context.Context, c client.Client, obj Object, owned []string) error {
	stale := Stale(obj.GetConditions(), owned)
	if len(stale) == 0 {
		return nil
	}
	helper, err := patch.NewHelper(obj, c)
	if err != nil {
		return fmt.Errorf("dropping old conditions: %w", err)
	}
	for _, t := range stale {
		conditions.Delete(obj, t)
	}
	if err := helper.Patch(ctx, obj); err != nil {
		return fmt.Errorf("dropping old conditions %v: %w", stale, err)
	}
	ctrl.LoggerFrom(ctx).Info("Dropped conditions left by other software", "conditions", stale)
	return nil
}
