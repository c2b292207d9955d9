package controlplane

import (
	"context"
	"errors"
	"fmt"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/serverplan"
)

// CreateRestoreServer creates the server that brings a running cluster back to a
// snapshot (a KThreesEtcdRestore named restore, snapshot a name in the control plane's
// S3 folder): its infrastructure machine, its KThreesConfig and its Machine, shaped as
// desiredstate.go shapes every server, plus the restore (desiredRestoreKThreesConfig).
// The restore controller calls it once every old server is gone, while the control
// plane controller holds off (restore_hold.go); it returns the new Machine's name. As
// in scaleUp, a failed step deletes what the earlier ones created.
func CreateRestoreServer(ctx context.Context, c client.Client, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, restore, snapshot string) (string, error) {
	r := &Reconciler{Client: c}
	name, err := newServerName(kcp, cluster)
	if err != nil {
		return "", err
	}
	failureDomain := serverplan.FailureDomainForScaleUp(ctx, cluster, collections.New(), collections.New())
	infra, infraRef, err := r.createInfraMachine(ctx, cluster, kcp, name)
	if err != nil {
		return "", err
	}
	config := desiredRestoreKThreesConfig(kcp, cluster, name, restore, snapshot)
	if err := c.Create(ctx, config); err != nil {
		return "", errors.Join(fmt.Errorf("creating KThreesConfig %s: %w", name, err), r.deleteQuietly(ctx, infra))
	}
	configRef := clusterv1.ContractVersionedObjectReference{
		APIGroup: bootstrapv1.GroupVersion.Group, Kind: "KThreesConfig", Name: name,
	}
	machine := desiredRestoreMachine(kcp, cluster, name, failureDomain, restore, configRef, infraRef)
	if err := c.Create(ctx, machine); err != nil {
		return "", errors.Join(fmt.Errorf("creating Machine %s: %w", name, err), r.deleteQuietly(ctx, infra), r.deleteQuietly(ctx, config))
	}
	ctrl.LoggerFrom(ctx).Info("Created the server that restores the snapshot", "Machine", name, "snapshot", snapshot, "failureDomain", failureDomain)
	return name, nil
}

// Remediating says whether the control plane is between deleting an unhealthy server
// and creating its replacement: a restore must not start then.
func Remediating(kcp *controlplanev1.KThreesControlPlane) bool {
	_, ok := kcp.Annotations[serverplan.RemediationInProgressAnnotation]
	return ok
}

// UpdatingInPlace says whether a server Machine is being updated in place.
func UpdatingInPlace(m *clusterv1.Machine) bool { return updatingInPlace(m) }

// ReleaseServerForRestore readies a server Machine that a restore deletes for a
// deletion that waits on nothing in the workload cluster, whose etcd is discarded:
// CAPI's Machine controller skips the drain and the wait for volumes (its exclude
// annotations), and this controller's etcd pre-terminate hook is dropped, since there
// is no member worth removing from an etcd about to be replaced. The Node is not
// deleted either: CAPI leaves the Nodes alone once no server Machine is left that is
// not being deleted. It reports whether m changed.
func ReleaseServerForRestore(m *clusterv1.Machine) bool {
	changed := false
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	for _, k := range []string{clusterv1.ExcludeNodeDrainingAnnotation, clusterv1.ExcludeWaitForNodeVolumeDetachAnnotation} {
		if _, ok := m.Annotations[k]; !ok {
			m.Annotations[k] = "etcd restore"
			changed = true
		}
	}
	if hasEtcdHook(m) {
		delete(m.Annotations, etcdMemberHook)
		changed = true
	}
	return changed
}
