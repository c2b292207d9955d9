package controlplane

import (
	"context"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// agentCertificatesChanged passes an agent Machine's event when its certificate
// report changes: the control plane renews agents' certificates too (renewal.go),
// and owns only the servers, whose every change already wakes it; and when the agent
// gets tied to its Node (nodeTie), which lets its report be read. Other changes of
// agents, which are most of a fleet's Machines, change no decision.
func agentCertificatesChanged() predicate.Funcs {
	reported := func(o client.Object) bool {
		_, ok := o.GetAnnotations()[clusterv1.MachineCertificatesExpiryDateAnnotation]
		return ok
	}
	isAgent := func(o client.Object) bool {
		_, server := o.GetLabels()[clusterv1.MachineControlPlaneLabel]
		return !server
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return isAgent(e.Object) && reported(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			key := clusterv1.MachineCertificatesExpiryDateAnnotation
			if !isAgent(e.ObjectNew) {
				return false
			}
			return e.ObjectOld.GetAnnotations()[key] != e.ObjectNew.GetAnnotations()[key] || nodeTie(e.ObjectOld) != nodeTie(e.ObjectNew)
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// nodeTie is what ties a Machine to its Node for the control plane (workload.NodesOf):
// its nodeRef, else its provider ID. An agent's k3s records its first certificate
// report as soon as it reaches the API server, before Cluster API has tied the
// Machine to its Node (seen on k3s v1.36.2, test/realk3s); the pass that the report
// woke finds no Node for it, so the tie coming later must wake the control plane
// again, or the report waits for k3s's next check, 30 minutes on.
func nodeTie(o client.Object) string {
	m, ok := o.(*clusterv1.Machine)
	if !ok {
		return ""
	}
	return m.Status.NodeRef.Name + " " + m.Spec.ProviderID
}

// agentToControlPlane maps an agent Machine to its cluster's control plane.
func (r *Reconciler) agentToControlPlane(ctx context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[clusterv1.ClusterNameLabel]
	if name == "" {
		return nil
	}
	cluster := &clusterv1.Cluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: name}, cluster); err != nil {
		return nil
	}
	return clusterToControlPlane(ctx, cluster)
}
