package cpfixtures

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReadyNode is a workload Node named name whose Ready condition is true.
func ReadyNode(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

// ReadyNodes are ready Nodes by name, the shape of workload.Nodes.
func ReadyNodes(names ...string) map[string]*corev1.Node {
	nodes := map[string]*corev1.Node{}
	for _, n := range names {
		nodes[n] = ReadyNode(n)
	}
	return nodes
}
