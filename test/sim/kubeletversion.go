package sim

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The kubelet writes the version it runs into its Node's status.nodeInfo at every
// status update (Kubernetes's pkg/kubelet/nodestatus, the VersionInfo setter; read
// from Kubernetes's source as we know it, not in the k3s mirror). k3s runs that
// kubelet in its own process (pkg/daemons/agent/agent.go startKubelet, v1.34.9 and
// v1.36.2). So a Node the restore brought back from an etcd snapshot shows, for a
// moment, the version of the snapshot's time, and then again the one its machine
// runs: the simulator keeps what each machine runs apart from the Node, and puts it
// back on the Node on the machine's next pass.

// kubeletRuns records the k3s version a Node's kubelet runs.
func (c *workloadCluster) kubeletRuns(node, version string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kubeletVersions == nil {
		c.kubeletVersions = map[string]string{}
	}
	c.kubeletVersions[node] = version
}

// kubeletVersion is the version the Node's kubelet runs, "" if not known.
func (c *workloadCluster) kubeletVersion(node string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kubeletVersions[node]
}

// reportAfterRestore is the kubelet's next status update on a cluster that was
// restored from a snapshot (reportKubeletVersion); nil-safe. Other clusters are left
// alone: nothing else rolls a Node's version back.
func (c *workloadCluster) reportAfterRestore(ctx context.Context, node string) error {
	if c == nil || node == "" {
		return nil
	}
	c.mu.Lock()
	restored := c.restores > 0
	c.mu.Unlock()
	if !restored {
		return nil
	}
	cl, _, err := c.ready()
	if err != nil {
		// No API to report to yet.
		return nil
	}
	return reportKubeletVersion(ctx, cl, c, node)
}

// reportKubeletVersion puts the version the Node's kubelet runs into the Node's
// status, when they differ: after a restore, and never otherwise (every other change
// of version writes both).
func reportKubeletVersion(ctx context.Context, cl client.Client, wc *workloadCluster, name string) error {
	version := wc.kubeletVersion(name)
	if version == "" {
		return nil
	}
	n := &corev1.Node{}
	if err := cl.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		return client.IgnoreNotFound(err)
	}
	if n.Status.NodeInfo.KubeletVersion == version {
		return nil
	}
	before := n.DeepCopy()
	n.Status.NodeInfo.KubeletVersion = version
	n.Status.NodeInfo.KubeProxyVersion = version //nolint:staticcheck // k3s still reports it.
	if err := cl.Status().Patch(ctx, n, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("reporting Node %s's kubelet version: %w", name, err)
	}
	return nil
}
