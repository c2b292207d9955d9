package token

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// errServersDisagree: two servers were given different tokens. Picking one would
// break the others, so nothing is recovered.
var errServersDisagree = errors.New("the servers' bootstrap data hold different join tokens")

// recoverFromServers reads the token back from the bootstrap data Secrets of the
// cluster's control-plane Machines. found is false when no server has one.
func recoverFromServers(ctx context.Context, r client.Reader, cluster *clusterv1.Cluster) (tok Token, found bool, err error) {
	machines := &clusterv1.MachineList{}
	if err := r.List(ctx, machines,
		client.InNamespace(cluster.Namespace),
		client.MatchingLabels{clusterv1.ClusterNameLabel: cluster.Name},
		client.HasLabels{clusterv1.MachineControlPlaneLabel},
	); err != nil {
		return Token{}, false, fmt.Errorf("listing control plane Machines: %w", err)
	}
	for i := range machines.Items {
		m := &machines.Items[i]
		name := m.Spec.Bootstrap.DataSecretName
		if name == nil || *name == "" {
			continue
		}
		s := &corev1.Secret{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: *name}, s); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return Token{}, false, fmt.Errorf("reading bootstrap data of Machine %s: %w", m.Name, err)
		}
		got, ok, err := tokenFromBootstrapData(s.Data["value"])
		if err != nil || !ok {
			// One unreadable Secret must not hide a readable one on another server.
			continue
		}
		if found && got != tok {
			return Token{}, false, errServersDisagree
		}
		tok, found = got, true
	}
	return tok, found, nil
}
