package controlplane

import (
	"context"
	"errors"
	"fmt"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/external"
	"sigs.k8s.io/cluster-api/util/collections"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/serverplan"
)

// scaleUp creates one server: its infrastructure machine (cloned from the template),
// its KThreesConfig and its Machine, all under one name (spec.machineNaming). If a later step fails, the
// earlier objects are deleted so that no orphan is left.
func (r *Reconciler) scaleUp(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, machines, outdated collections.Machines) error {
	name, err := newServerName(kcp, cluster)
	if err != nil {
		return err
	}
	failureDomain := serverplan.FailureDomainForScaleUp(ctx, cluster, machines, outdated)

	infra, infraRef, err := r.createInfraMachine(ctx, cluster, kcp, name)
	if err != nil {
		return err
	}
	config := desiredKThreesConfig(kcp, cluster, name)
	if err := r.Client.Create(ctx, config); err != nil {
		r.leftovers.again(client.ObjectKeyFromObject(kcp))
		return errors.Join(fmt.Errorf("creating KThreesConfig %s: %w", name, err), r.deleteQuietly(ctx, infra))
	}
	configRef := clusterv1.ContractVersionedObjectReference{
		APIGroup: bootstrapv1.GroupVersion.Group, Kind: "KThreesConfig", Name: name,
	}
	machine := desiredMachine(kcp, cluster, name, failureDomain, configRef, infraRef)
	remediation, forRemediation := "", false
	if key, value, ok := serverplan.RemediationFor(kcp); ok {
		// The replacement of a remediated server carries the remediation's history,
		// so that a replacement that fails again counts as a retry.
		if machine.Annotations == nil {
			machine.Annotations = map[string]string{}
		}
		machine.Annotations[key] = value
		remediation, forRemediation = value, true
	}
	if err := r.Client.Create(ctx, machine); err != nil {
		r.leftovers.again(client.ObjectKeyFromObject(kcp))
		return errors.Join(fmt.Errorf("creating Machine %s: %w", name, err), r.deleteQuietly(ctx, infra), r.deleteQuietly(ctx, config))
	}
	r.expectations.created(client.ObjectKeyFromObject(kcp), name)
	if forRemediation {
		// The deferred patch writes this: the remediation is complete.
		delete(kcp.Annotations, serverplan.RemediationInProgressAnnotation)
		ctrl.LoggerFrom(ctx).Info("Created the replacement of a remediated server", "Machine", name, "remediation", remediation)
	}
	ctrl.LoggerFrom(ctx).Info("Created a control plane Machine", "Machine", name, "failureDomain", failureDomain)
	return nil
}

func (r *Reconciler) createInfraMachine(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, name string) (client.Object, clusterv1.ContractVersionedObjectReference, error) {
	ref := kcp.Spec.MachineTemplate.Spec.InfrastructureRef
	template, err := external.GetObjectFromContractVersionedRef(ctx, r.Client, ref, kcp.Namespace)
	if err != nil {
		return nil, ref, fmt.Errorf("reading infrastructure template %s %s: %w", ref.Kind, ref.Name, err)
	}
	if err := r.ownTemplateByCluster(ctx, cluster, template); err != nil {
		return nil, ref, err
	}
	infra, err := desiredInfraMachine(template, kcp, cluster, name)
	if err != nil {
		return nil, ref, err
	}
	if err := r.Client.Create(ctx, infra); err != nil {
		return nil, ref, fmt.Errorf("creating infrastructure machine %s: %w", name, err)
	}
	return infra, clusterv1.ContractVersionedObjectReference{
		APIGroup: infra.GroupVersionKind().Group, Kind: infra.GetKind(), Name: infra.GetName(),
	}, nil
}

// deleteServer deletes a server Machine and remembers that it did until the cache
// shows it (machine_expectations.go). A Machine already gone counts as deleted.
func (r *Reconciler) deleteServer(ctx context.Context, kcp *controlplanev1.KThreesControlPlane, m *clusterv1.Machine) error {
	if err := r.Client.Delete(ctx, m); client.IgnoreNotFound(err) != nil {
		return err
	}
	r.expectations.deleted(client.ObjectKeyFromObject(kcp), m)
	return nil
}

func (r *Reconciler) deleteQuietly(ctx context.Context, obj client.Object) error {
	if err := r.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("cleaning up %s: %w", obj.GetName(), err)
	}
	return nil
}

// removeServer deletes the server a scale-down chose (serverplan.SelectMachineForScaleDown).
// It returns why no server could be chosen (victim nil), "" once one is deleted, for
// the ScalingDown condition: a scale-down must never stall without saying so.
func (r *Reconciler) removeServer(ctx context.Context, kcp *controlplanev1.KThreesControlPlane, victim *clusterv1.Machine, machines collections.Machines) (string, error) {
	if victim == nil {
		return fmt.Sprintf("no server to remove was found among %s", list(machines.Names())), nil
	}
	if err := r.deleteServer(ctx, kcp, victim); err != nil {
		return "", fmt.Errorf("deleting Machine %s: %w", victim.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Deleted a control plane Machine", "Machine", victim.Name)
	return "", nil
}
