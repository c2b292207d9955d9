package workload

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrNotConnected means the workload cluster's API cannot be reached (yet): nothing
// can be said about its nodes.
var ErrNotConnected = clustercache.ErrClusterNotConnected

// Nodes are the workload cluster's nodes of a set of Machines, keyed by Machine name.
type Nodes map[string]*corev1.Node

// NodesOf finds each Machine's Node: by the Machine's nodeRef when CAPI has set it,
// else by provider ID. A Machine without a Node is absent from the result.
func NodesOf(ctx context.Context, cc clustercache.ClusterCache, cluster client.ObjectKey, machines collections.Machines) (Nodes, error) {
	reader, err := cc.GetReader(ctx, cluster)
	if err != nil {
		return nil, err
	}
	list := &corev1.NodeList{}
	if err := reader.List(ctx, list); err != nil {
		if errors.Is(err, clustercache.ErrClusterNotConnected) {
			return nil, err
		}
		return nil, fmt.Errorf("listing workload cluster Nodes: %w", err)
	}
	byName := make(map[string]*corev1.Node, len(list.Items))
	byProviderID := make(map[string]*corev1.Node, len(list.Items))
	for i := range list.Items {
		n := &list.Items[i]
		byName[n.Name] = n
		if n.Spec.ProviderID != "" {
			byProviderID[n.Spec.ProviderID] = n
		}
	}
	out := Nodes{}
	for _, m := range machines {
		if n := nodeOf(m, byName, byProviderID); n != nil {
			out[m.Name] = n
		}
	}
	return out, nil
}

func nodeOf(m *clusterv1.Machine, byName, byProviderID map[string]*corev1.Node) *corev1.Node {
	if m.Status.NodeRef.Name != "" {
		if n, ok := byName[m.Status.NodeRef.Name]; ok {
			return n
		}
	}
	if m.Spec.ProviderID != "" {
		return byProviderID[m.Spec.ProviderID]
	}
	return nil
}

// Ready reports whether the Machine's Node exists and its Ready condition is True.
func (n Nodes) Ready(machineName string) bool {
	node, ok := n[machineName]
	if !ok {
		return false
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
