package main

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	cloudv1 "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/cloud/api/v1alpha1"
	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
	inmemoryclient "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime/client"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const testGroup = "bench/c0000"

// workload is an in-memory workload cluster with two servers, s1 (etcd's leader) and
// s2, as the in-memory backend leaves them: Nodes and one etcd Pod per member.
func workload(t *testing.T) (*harness, inmemoryclient.Client) {
	t.Helper()
	m := inmemoryruntime.NewManager(inMemoryScheme())
	m.AddResourceGroup(testGroup)
	c := m.GetResourceGroup(testGroup).GetClient()
	ctx := context.Background()
	leaderFrom := time.Now().Add(-time.Minute).Format(time.RFC3339)
	for _, name := range []string{"s1", "s2"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{controlPlaneRoleLabel: ""}}}
		if err := c.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: metav1.NamespaceSystem, Name: "etcd-" + name,
				Labels:      map[string]string{"component": "etcd", "tier": "control-plane"},
				Annotations: map[string]string{cloudv1.EtcdClusterIDAnnotationName: "1", cloudv1.EtcdMemberIDAnnotationName: name},
			},
			Spec: corev1.PodSpec{NodeName: name},
		}
		if name == "s1" {
			pod.Annotations[cloudv1.EtcdLeaderFromAnnotationName] = leaderFrom
		}
		if err := c.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	h := &harness{inMemory: m}
	if err := h.k3sPass(ctx, testGroup); err != nil {
		t.Fatal(err)
	}
	return h, c
}

// askRemoval asks for the member's removal as capk3s does: a merge patch of the Node
// through the in-memory API server, which applies it to the object it read
// unstructured (its PATCH handler).
func askRemoval(t *testing.T, c inmemoryclient.Client, node string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	obj.SetName(node)
	ctx := context.Background()
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+etcdRemoveAnnotation+`":"true"}}}`))
	if err := c.Patch(ctx, obj, patch); err != nil {
		t.Fatal(err)
	}
}

// leaderOf is etcd's leader as the in-memory backend reads it: the member not removed
// with the latest leader-from time.
func leaderOf(t *testing.T, c inmemoryclient.Client) string {
	t.Helper()
	pods, err := listInMemory[corev1.Pod](context.Background(), c, "PodList", client.InNamespace(metav1.NamespaceSystem))
	if err != nil {
		t.Fatal(err)
	}
	leader, from := "", time.Time{}
	for _, p := range pods {
		if _, removed := p.Annotations[cloudv1.EtcdMemberRemoved]; removed {
			continue
		}
		if at, err := time.Parse(time.RFC3339, p.Annotations[cloudv1.EtcdLeaderFromAnnotationName]); err == nil && at.After(from) {
			leader, from = p.Spec.NodeName, at
		}
	}
	return leader
}

func TestTheStandInAnswersARemovalAskedThroughTheInMemoryAPIServer(t *testing.T) {
	h, c := workload(t)
	askRemoval(t, c, "s2")
	if err := h.k3sPass(context.Background(), testGroup); err != nil {
		t.Fatalf("the stand-in's pass after the removal request: %v", err)
	}
	nodes, err := listNodes(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		removed := n.Annotations[etcdRemovedAnnotation]
		if n.Name == "s2" && removed == "" {
			t.Errorf("the removal of s2's member was not answered")
		}
		if n.Name == "s1" && removed != "" {
			t.Errorf("s1's member was removed too")
		}
	}
	if got := leaderOf(t, c); got != "s1" {
		t.Errorf("etcd's leader after removing a follower: %q, want s1", got)
	}
}

// When the leader's member leaves, etcd elects another; the in-memory backend adds no
// member to a cluster without a leader.
func TestRemovingTheLeadersMemberLeavesEtcdWithALeader(t *testing.T) {
	h, c := workload(t)
	askRemoval(t, c, "s1")
	if err := h.k3sPass(context.Background(), testGroup); err != nil {
		t.Fatal(err)
	}
	if got := leaderOf(t, c); got != "s2" {
		t.Errorf("etcd's leader after removing the leader's member: %q, want s2", got)
	}
}
