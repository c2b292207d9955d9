package inplace

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// errNoSUC means the workload cluster cannot run Plans; its message says what is
// missing, for the CanUpdate… answers and the Machine's Updating condition.
var errNoSUC = errors.New("the workload cluster has no system-upgrade-controller")

// sucInstall is where SUC runs on a workload cluster.
type sucInstall struct {
	// namespace is the SUC Deployment's, the one it watches Plans in.
	namespace string
}

// findSUC detects SUC as capk3s needs it: the Plan kind is served, and a Deployment
// named system-upgrade-controller (in any namespace) has an available replica. A
// Deployment that is installed but not available counts as missing: Plans would
// not be acted on.
func findSUC(ctx context.Context, c client.Client) (sucInstall, error) {
	plans := &unstructured.UnstructuredList{}
	plans.SetGroupVersionKind(planGVK.GroupVersion().WithKind(planGVK.Kind + "List"))
	if err := c.List(ctx, plans, client.Limit(1)); err != nil {
		if meta.IsNoMatchError(err) {
			return sucInstall{}, fmt.Errorf("%w: the Plan kind (upgrade.cattle.io/v1) is not installed", errNoSUC)
		}
		return sucInstall{}, fmt.Errorf("listing Plans: %w", err)
	}
	deps := &unstructured.UnstructuredList{}
	deps.SetAPIVersion("apps/v1")
	deps.SetKind("DeploymentList")
	if err := c.List(ctx, deps, client.MatchingFields{"metadata.name": sucDeploymentName}); err != nil {
		return sucInstall{}, fmt.Errorf("looking for the %s Deployment: %w", sucDeploymentName, err)
	}
	for _, d := range deps.Items {
		if available, _, _ := unstructured.NestedInt64(d.Object, "status", "availableReplicas"); available > 0 {
			return sucInstall{namespace: d.GetNamespace()}, nil
		}
	}
	if len(deps.Items) == 0 {
		return sucInstall{}, fmt.Errorf("%w: no Deployment named %s", errNoSUC, sucDeploymentName)
	}
	return sucInstall{}, fmt.Errorf("%w: the %s Deployment in namespace %s has no available replica",
		errNoSUC, sucDeploymentName, deps.Items[0].GetNamespace())
}
