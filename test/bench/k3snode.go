package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The in-memory backend makes Nodes as kubeadm's kubelet would. A k3s server's Node
// carries more, written by k3s itself on the workload cluster, and capk3s's control
// plane reads it: the etcd role label and the etcd member annotations (its etcd health
// and membership handshake come from them). The stand-in writes exactly that on the
// Nodes of control-plane machines, and answers a member removal request as k3s's etcd
// member controller does. It writes to the in-memory workload clusters only, never to
// the management API, so it adds nothing to the counted requests.
const (
	etcdRoleLabel             = "node-role.kubernetes.io/etcd"
	controlPlaneRoleLabel     = "node-role.kubernetes.io/control-plane"
	masterRoleLabel           = "node-role.kubernetes.io/master"
	etcdNodeNameAnnotation    = "etcd.k3s.cattle.io/node-name"
	etcdNodeAddressAnnotation = "etcd.k3s.cattle.io/node-address"
	etcdRemoveAnnotation      = "etcd.k3s.cattle.io/remove"
	etcdRemovedAnnotation     = "etcd.k3s.cattle.io/removed-node-name"
)

// standInClusters are the workload clusters the stand-in looks after, by the
// in-memory resource group name the backend gives them ("<namespace>/<name>").
type standInClusters struct {
	mu     sync.Mutex
	groups []string
}

func (s *standInClusters) add(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups = append(s.groups, klog.KRef(namespace, name).String())
}

func (s *standInClusters) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.groups...)
}

// startK3sStandIn runs the stand-in until ctx ends, a pass every 500ms.
func (h *harness) startK3sStandIn(ctx context.Context) error {
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			for _, g := range h.standIn.list() {
				if err := h.k3sPass(ctx, g); err != nil && ctx.Err() == nil {
					klog.FromContext(ctx).V(2).Info("k3s stand-in pass failed", "cluster", g, "err", err)
				}
			}
		}
	}()
	return nil
}

// k3sPass brings one workload cluster's server Nodes to what k3s would write.
func (h *harness) k3sPass(ctx context.Context, group string) error {
	c := h.inMemory.GetResourceGroup(group).GetClient()
	nodes, err := listNodes(ctx, c)
	if err != nil {
		return err
	}
	for i := range nodes {
		n := &nodes[i]
		if _, server := n.Labels[controlPlaneRoleLabel]; !server {
			continue
		}
		want := n.DeepCopy()
		k3sServerNode(want)
		if equalMeta(n, want) {
			continue
		}
		if want.Annotations[etcdRemovedAnnotation] != "" && n.Annotations[etcdRemovedAnnotation] == "" {
			if err := removeEtcdMember(ctx, c, n.Name); err != nil {
				return err
			}
		}
		if err := c.Update(ctx, want); err != nil {
			return fmt.Errorf("updating Node %s: %w", n.Name, err)
		}
	}
	return nil
}

// k3sServerNode sets what k3s writes on an etcd server's Node: the role labels with
// k3s's "true", the member annotations, and the removal record once removal was asked.
func k3sServerNode(n *corev1.Node) {
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	for _, l := range []string{controlPlaneRoleLabel, masterRoleLabel, etcdRoleLabel} {
		n.Labels[l] = "true"
	}
	member := n.Name + "-" + memberSuffix(n.Name)
	n.Annotations[etcdNodeNameAnnotation] = member
	n.Annotations[etcdNodeAddressAnnotation] = "127.0.0.1"
	if strings.EqualFold(n.Annotations[etcdRemoveAnnotation], "true") {
		n.Annotations[etcdRemovedAnnotation] = member
	}
}

// memberSuffix stands for the random suffix k3s gives a member name; derived from the
// Node name so that every pass writes the same value.
func memberSuffix(node string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(node))
	return fmt.Sprintf("%08x", h.Sum32())
}

func equalMeta(a, b client.Object) bool {
	return maps.Equal(a.GetLabels(), b.GetLabels()) && maps.Equal(a.GetAnnotations(), b.GetAnnotations())
}

// describeNodes describes each workload Node of a cluster with its etcd labels and
// annotations, for explaining a stall.
func (h *harness) describeNodes(ctx context.Context, namespace string) func(cluster string) string {
	return func(cluster string) string {
		nodes, err := listNodes(ctx, h.inMemory.GetResourceGroup(klog.KRef(namespace, cluster).String()).GetClient())
		if err != nil {
			return fmt.Sprintf("    nodes: %v\n", err)
		}
		var b strings.Builder
		for i := range nodes {
			n := &nodes[i]
			ready := "unknown"
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					ready = string(c.Status)
				}
			}
			fmt.Fprintf(&b, "    node %s (Ready %s, kubelet %s): etcd role %q, member %q, remove %q, removed %q\n", n.Name, ready,
				n.Status.NodeInfo.KubeletVersion, n.Labels[etcdRoleLabel], n.Annotations[etcdNodeNameAnnotation],
				n.Annotations[etcdRemoveAnnotation], n.Annotations[etcdRemovedAnnotation])
		}
		return b.String()
	}
}
