package bootstrap

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// configOwner is what a KThreesConfig bootstraps: a Machine, or a MachinePool's
// machines. CAPI's own helper for this lives in the kubeadm bootstrap reconciler
// package; depending on it would pull kubeadm's reconciler into ours.
type configOwner struct {
	kind        string
	name        string
	clusterName string
	version     string
	server      bool
	// pool is set for a MachinePool: its data Secret follows the pool (machinepool.go).
	pool bool
	// dataSecretName is the data Secret a Machine names (spec.bootstrap.dataSecretName),
	// if any: CAPI copies it from the config's status (see renderedBefore).
	dataSecretName string
}

// ownerOf returns the config's Machine or MachinePool, or nil while CAPI has not set
// the owner reference yet (the Machine watch wakes the config when it does).
func ownerOf(ctx context.Context, c client.Client, config *bootstrapv1.KThreesConfig) (*configOwner, error) {
	for _, ref := range config.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != clusterv1.GroupVersion.Group {
			continue
		}
		key := client.ObjectKey{Namespace: config.Namespace, Name: ref.Name}
		switch ref.Kind {
		case "Machine":
			m := &clusterv1.Machine{}
			if err := c.Get(ctx, key, m); err != nil {
				return nil, ignoreNotFound(err, "Machine", key)
			}
			return &configOwner{kind: ref.Kind, name: m.Name, clusterName: m.Spec.ClusterName,
				version: m.Spec.Version, server: util.IsControlPlaneMachine(m),
				dataSecretName: ptr.Deref(m.Spec.Bootstrap.DataSecretName, "")}, nil
		case "MachinePool":
			mp := &clusterv1.MachinePool{}
			if err := c.Get(ctx, key, mp); err != nil {
				return nil, ignoreNotFound(err, "MachinePool", key)
			}
			// server records what the pool asks for; the reconciler refuses it, since k3s
			// servers are the control plane's Machines (see refusePoolServer).
			_, server := mp.Spec.Template.Labels[clusterv1.MachineControlPlaneLabel]
			return &configOwner{kind: ref.Kind, name: mp.Name, clusterName: mp.Spec.ClusterName,
				version: mp.Spec.Template.Spec.Version, server: server, pool: true}, nil
		}
	}
	return nil, nil
}

func ignoreNotFound(err error, kind string, key client.ObjectKey) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("reading %s %s: %w", kind, key, err)
}
