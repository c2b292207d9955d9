package initguard

import (
	"context"
	"fmt"

	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// Started reports whether a server may already hold the cluster's secrets, with
// the evidence as a phrase fit for a condition message ("" when none).
//
// cluster and kcp are the controller's (possibly cached, possibly stale) copies;
// c is its client. live, when not nil, is an uncached reader such as the
// manager's API reader: the statuses are then confirmed there when the copies
// say no, and the servers' bootstrap data is looked for there, so that a lagging
// cache cannot make a new secret look safe. Any API error is returned.
func Started(ctx context.Context, c, live client.Reader, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane) (evidence string, err error) {
	if why := initialized(cluster, kcp); why != "" {
		return why, nil
	}
	r := c
	if live != nil {
		r = live
		liveCluster := &clusterv1.Cluster{}
		if err := live.Get(ctx, client.ObjectKeyFromObject(cluster), liveCluster); err != nil {
			return "", fmt.Errorf("confirming the Cluster is not initialized: %w", err)
		}
		liveKCP := &controlplanev1.KThreesControlPlane{}
		if err := live.Get(ctx, client.ObjectKeyFromObject(kcp), liveKCP); err != nil {
			return "", fmt.Errorf("confirming the control plane is not initialized: %w", err)
		}
		if why := initialized(liveCluster, liveKCP); why != "" {
			return why, nil
		}
	}
	secrets, err := ServerDataSecrets(ctx, r, cluster, kcp)
	if err != nil {
		return "", err
	}
	for _, d := range secrets {
		if d.Named {
			return d.Of + " has bootstrap data (Secret " + d.Name + ")", nil
		}
		if _, found, err := d.Read(ctx, r); err != nil {
			return "", err
		} else if found {
			return d.Of + " has written bootstrap data (Secret " + d.Name + ")", nil
		}
	}
	return "", nil
}

// initialized says which status marks the control plane initialized, or "".
func initialized(cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane) string {
	switch {
	case ptr.Deref(kcp.Status.Initialization.ControlPlaneInitialized, false):
		return "the KThreesControlPlane's status says it is initialized"
	case ptr.Deref(cluster.Status.Initialization.ControlPlaneInitialized, false):
		return "the Cluster's status says its control plane is initialized"
	}
	return ""
}
