package controlplane

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/test/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A server Machine that belongs to nobody (a cluster taken over from other software)
// is adopted, not replaced; a worker and another cluster's server are left alone.
func TestOwnerlessServerMachinesAreAdopted(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster, kcp := newClusterWithControlPlane(t, ns, false)

	newMachine := func(name, clusterName string, server bool) *clusterv1.Machine {
		labels := map[string]string{clusterv1.ClusterNameLabel: clusterName}
		if server {
			labels[clusterv1.MachineControlPlaneLabel] = ""
		}
		m := &clusterv1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: clusterv1.MachineSpec{
				ClusterName: clusterName, Version: "v1.31.4+k3s1",
				Bootstrap: clusterv1.Bootstrap{DataSecretName: &name},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineKind, Name: name,
				},
			},
		}
		if err := env.Client.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	server := newMachine("old-server", cluster.Name, true)
	worker := newMachine("old-worker", cluster.Name, false)
	foreign := newMachine("other-server", "other", true)

	r := &Reconciler{Client: env.Client}
	owned, err := r.controlPlaneMachines(ctx, cluster, kcp)
	if err != nil {
		t.Fatal(err)
	}
	if owned.Len() != 1 || owned.Names()[0] != server.Name {
		t.Fatalf("owned machines = %v, want [%s]", owned.Names(), server.Name)
	}
	got := &clusterv1.Machine{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(server), got); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(got); ref == nil || ref.UID != kcp.UID {
		t.Errorf("adopted server controller = %+v, want the KThreesControlPlane", ref)
	}
	if got.Labels[clusterv1.MachineControlPlaneNameLabel] != kcp.Name {
		t.Errorf("adopted server labels = %v, want %s=%s", got.Labels, clusterv1.MachineControlPlaneNameLabel, kcp.Name)
	}
	for _, m := range []*clusterv1.Machine{worker, foreign} {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(m), got); err != nil {
			t.Fatal(err)
		}
		if len(got.OwnerReferences) != 0 {
			t.Errorf("%s was adopted, but it is not this cluster's server", m.Name)
		}
	}
}
