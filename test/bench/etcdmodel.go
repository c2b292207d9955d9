package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	cloudv1 "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/cloud/api/v1alpha1"
	inmemoryclient "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime/client"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The in-memory backend models etcd with one Pod per member ("etcd-<machine>") in
// kube-system, annotated with the member's ID, "member-removed" once it left, and
// "leader-from" on the leader (the newest such time wins). A new member joins only
// while some member is the leader ("invalid etcd cluster, no leader found"
// otherwise). KCP keeps that true from outside: before removing the leader's member
// it moves leadership through the backend's etcd API. k3s does not (etcd elects a
// new leader by itself when the leader leaves), so the stand-in plays etcd's part
// when it answers a removal: the member is marked removed and, if it led, the
// oldest remaining member takes over. Without it, the second server created by a
// rolling replacement never got its etcd member, once the first server (the
// leader) had been replaced.

// removeEtcdMember marks the member on node removed in the backend's etcd model and
// hands leadership to another member if it led.
func removeEtcdMember(ctx context.Context, c inmemoryclient.Client, node string) error {
	pods, err := listInMemory[corev1.Pod](ctx, c, "PodList", client.InNamespace(metav1.NamespaceSystem),
		client.MatchingLabels{"component": "etcd", "tier": "control-plane"})
	if err != nil {
		return err
	}
	var leaving *corev1.Pod
	var rest []*corev1.Pod
	leader, leaderFrom := "", time.Time{}
	for i := range pods {
		p := &pods[i]
		if _, removed := p.Annotations[cloudv1.EtcdMemberRemoved]; removed {
			continue
		}
		if t, err := time.Parse(time.RFC3339, p.Annotations[cloudv1.EtcdLeaderFromAnnotationName]); err == nil && t.After(leaderFrom) {
			leader, leaderFrom = p.Name, t
		}
		if p.Spec.NodeName == node {
			leaving = p
		} else {
			rest = append(rest, p)
		}
	}
	if leaving == nil {
		return nil
	}
	if leaving.Name == leader && len(rest) > 0 {
		sort.Slice(rest, func(i, j int) bool { return rest[i].CreationTimestamp.Before(&rest[j].CreationTimestamp) })
		next := rest[0]
		// The annotation has a resolution of a second: the new leader's time must be
		// later than the old one's, or the old one would still win.
		next.Annotations[cloudv1.EtcdLeaderFromAnnotationName] = leaderFrom.Add(time.Second).Format(time.RFC3339)
		if now := time.Now(); now.After(leaderFrom.Add(time.Second)) {
			next.Annotations[cloudv1.EtcdLeaderFromAnnotationName] = now.Format(time.RFC3339)
		}
		if err := c.Update(ctx, next); err != nil {
			return fmt.Errorf("moving etcd leadership to %s: %w", next.Name, err)
		}
	}
	if leaving.Annotations == nil {
		leaving.Annotations = map[string]string{}
	}
	leaving.Annotations[cloudv1.EtcdMemberRemoved] = ""
	if err := c.Update(ctx, leaving); err != nil {
		return fmt.Errorf("removing etcd member %s: %w", leaving.Name, err)
	}
	return nil
}

// listNodes lists a workload cluster's Nodes from the in-memory backend's store. The
// store keeps an object that was patched through the in-memory API server as the
// unstructured object the patch was applied to (its own TODO: "if unstructured,
// convert to typed object"), and a typed list then fails on it ("can't assign or
// convert unstructured.Unstructured into v1.Node"). capk3s patches a server's Node
// to ask for its member's removal, so after the first rolling replacement every typed
// list of that cluster's Nodes failed, the stand-in never answered the removal, and
// the rollout waited forever. Listing unstructured reads both kinds; the stand-in's
// next update stores the Node typed again.
func listNodes(ctx context.Context, c inmemoryclient.Client) ([]corev1.Node, error) {
	return listInMemory[corev1.Node](ctx, c, "NodeList")
}

// listInMemory lists kind (a core/v1 list kind) unstructured and reads each item
// typed; see listNodes.
func listInMemory[T any](ctx context.Context, c inmemoryclient.Client, kind string, opts ...client.ListOption) ([]T, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing %s: %w", kind, err)
	}
	out := make([]T, len(list.Items))
	for i := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &out[i]); err != nil {
			return nil, fmt.Errorf("reading %s item %s: %w", kind, list.Items[i].GetName(), err)
		}
	}
	return out, nil
}
