package chaos

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxSurge is the control planes' rollout surge (the default, 1).
const maxSurge = 1

// surgeChecker counts a cluster's server Machines, deleting ones included, each time
// one is created: never more than the replicas asked for plus maxSurge. A control
// plane that acted twice on one decision (two leaders, or one that forgot a Machine
// it had just created) creates one too many.
type surgeChecker struct {
	tally
	reg    *registry
	reader client.Reader
}

func (c *surgeChecker) name() string { return "servers <= replicas + maxSurge" }

func (c *surgeChecker) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{AddFunc: c.added}
}

func (c *surgeChecker) added(obj any) {
	m, ok := obj.(*clusterv1.Machine)
	if !ok {
		return
	}
	cp, ok := m.Labels[clusterv1.MachineControlPlaneNameLabel]
	if !ok {
		return
	}
	t := c.reg.get(types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.ClusterName})
	if t == nil || t.controlPlane != cp {
		return
	}
	list := &clusterv1.MachineList{}
	if err := c.reader.List(context.Background(), list, client.InNamespace(m.Namespace),
		client.MatchingLabels{clusterv1.MachineControlPlaneNameLabel: cp}); err != nil {
		return
	}
	allowed := t.allowedAt(m.CreationTimestamp.Time) + maxSurge
	c.check(int32(len(list.Items)) <= allowed, "%s: %d server Machines once %s was created, more than %d (replicas + maxSurge)",
		t.key, len(list.Items), m.Name, allowed)
}
