package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// explainStall prints why the clusters of names (at most limit of them) are not done:
// each one's Cluster conditions that are not True and each of its Machines with its
// phase, version and the conditions that keep it from Ready. A run that waits in vain
// says what it waits for, so that a stall can be told from a slow run, and its cause
// read off the objects instead of guessed.
//
// nodes, when set, describes a cluster's workload Nodes as the k3s stand-in sees them.
func (r *readiness) explainStall(ctx context.Context, w io.Writer, names []string, limit int, nodes func(cluster string) string) {
	sort.Strings(names)
	clusters := &clusterv1.ClusterList{}
	machines := &clusterv1.MachineList{}
	if err := r.cache.List(ctx, clusters); err != nil {
		_, _ = fmt.Fprintf(w, "explaining the stall: %v\n", err)
		return
	}
	if err := r.cache.List(ctx, machines); err != nil {
		_, _ = fmt.Fprintf(w, "explaining the stall: %v\n", err)
		return
	}
	byName := map[string]*clusterv1.Cluster{}
	for i := range clusters.Items {
		byName[clusters.Items[i].Name] = &clusters.Items[i]
	}
	_, _ = fmt.Fprintf(w, "%d clusters not done; the first %d:\n", len(names), min(limit, len(names)))
	for i, name := range names {
		if i == limit {
			break
		}
		c := byName[name]
		if c == nil {
			_, _ = fmt.Fprintf(w, "  cluster %s: not found\n", name)
			continue
		}
		_, _ = fmt.Fprintf(w, "  cluster %s: %s\n", name, notTrue(c.Status.Conditions))
		for j := range machines.Items {
			m := &machines.Items[j]
			if m.Spec.ClusterName != name {
				continue
			}
			_, _ = fmt.Fprintf(w, "    machine %s (%s, %s, deleting %t): %s\n", m.Name, m.Status.Phase, m.Spec.Version,
				m.DeletionTimestamp != nil, notTrue(m.Status.Conditions))
		}
		if nodes != nil {
			_, _ = fmt.Fprintf(w, "%s", nodes(name))
		}
	}
}

// negativeConditions are CAPI's conditions whose False is the healthy state.
var negativeConditions = map[string]bool{
	clusterv1.PausedCondition: true, clusterv1.DeletingCondition: true, clusterv1.RollingOutCondition: true,
	clusterv1.ScalingUpCondition: true, clusterv1.ScalingDownCondition: true, clusterv1.RemediatingCondition: true,
	clusterv1.MachineUpdatingCondition: true,
}

// notTrue lists the conditions that are not in their healthy state, with reason and
// message.
func notTrue(conds []metav1.Condition) string {
	var out []string
	for _, c := range conds {
		if c.Status == metav1.ConditionTrue || (c.Status == metav1.ConditionFalse && negativeConditions[c.Type]) {
			continue
		}
		msg := strings.Join(strings.Fields(c.Message), " ")
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		out = append(out, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, msg))
	}
	if len(out) == 0 {
		return "all conditions True"
	}
	return strings.Join(out, "; ")
}
