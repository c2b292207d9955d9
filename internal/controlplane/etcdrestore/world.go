package etcdrestore

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane"
	"github.com/capk3s/capk3s/internal/controlplane/restoreplan"
)

// world is one pass's reading of what the restore acts on.
type world struct {
	restoreplan.World
	cluster  *clusterv1.Cluster
	machines map[string]*clusterv1.Machine
}

// observe reads the world. Machines are read live (APIReader): a cache behind the
// restore's own deletes and creates would make it create a second first server or
// miss an old one.
func (r *Reconciler) observe(ctx context.Context, restore *controlplanev1.KThreesEtcdRestore) (world, error) {
	w := world{machines: map[string]*clusterv1.Machine{}}
	w.ClusterName, w.Now, w.Created = restore.Spec.ClusterName, time.Now(), restore.CreationTimestamp.Time
	w.FirstServerDeadline = r.FirstServerDeadline
	cluster := &clusterv1.Cluster{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: restore.Namespace, Name: restore.Spec.ClusterName}, cluster)
	if apierrors.IsNotFound(err) {
		return w, nil
	}
	if err != nil {
		return w, fmt.Errorf("reading Cluster: %w", err)
	}
	w.cluster, w.ClusterFound, w.ClusterDeleting = cluster, true, !cluster.DeletionTimestamp.IsZero()
	kcp, err := r.controlPlane(ctx, cluster)
	if err != nil || kcp == nil {
		return w, err
	}
	w.ControlPlane = kcp
	w.Paused = annotations.IsPaused(cluster, kcp)
	w.Remediating = controlplane.Remediating(kcp)
	w.EtcdHealthy = conditions.IsTrue(kcp, controlplanev1.EtcdClusterHealthyCondition)
	machines := &clusterv1.MachineList{}
	if err := r.APIReader.List(ctx, machines, client.InNamespace(cluster.Namespace), client.MatchingLabels{
		clusterv1.ClusterNameLabel: cluster.Name, clusterv1.MachineControlPlaneNameLabel: kcp.Name,
	}); err != nil {
		return w, fmt.Errorf("listing server Machines: %w", err)
	}
	for i := range machines.Items {
		m := &machines.Items[i]
		w.machines[m.Name] = m
		w.Servers = append(w.Servers, server(m))
	}
	if restore.Status.Phase == controlplanev1.EtcdRestoreJoiningServers {
		w.WorkloadNodes, w.WorkloadNodesProblem = r.workloadNodes(ctx, cluster)
	}
	if restore.Status.Phase == controlplanev1.EtcdRestoreRestoringFirstServer {
		w.OldAPI = r.oldAPI(ctx, cluster, time.Now())
	}
	if restore.Status.Phase == "" || restore.Status.Phase == controlplanev1.EtcdRestorePending {
		if err := r.observePending(ctx, restore, &w); err != nil {
			return w, err
		}
	}
	return w, nil
}

// observePending reads what a restore that has not started proves its snapshot
// with: the lock, the snapshot, and (while the old servers run) k3s's list.
func (r *Reconciler) observePending(ctx context.Context, restore *controlplanev1.KThreesEtcdRestore, w *world) error {
	var err error
	if w.Snapshot, err = snapshot(ctx, r.Client, restore); err != nil {
		return err
	}
	if w.Lock, err = r.lockOf(ctx, w.ControlPlane); err != nil {
		return err
	}
	w.EndpointServer = endpointServer(w.cluster, w.machines)
	w.SafetyPrefix = safetyPrefix(restore)
	if w.S3, err = s3Target(ctx, r.APIReader, w.cluster, w.ControlPlane); err != nil {
		return err
	}
	// After a failed restore no server runs to ask: the decision needs no list.
	failedHolder := w.Lock.Holder != restore.Name && w.Lock.HolderPhase == controlplanev1.EtcdRestoreFailed
	tookOver := w.Lock.Holder == restore.Name && w.Lock.TakenOver
	if w.Snapshot.Name != "" && !failedHolder && !tookOver && restoreplan.Refusal(w.World) == "" {
		w.Proof = r.prove(ctx, w.cluster, w.ControlPlane)
	}
	return nil
}

// controlPlane is the Cluster's KThreesControlPlane, nil when it references none.
func (r *Reconciler) controlPlane(ctx context.Context, cluster *clusterv1.Cluster) (*controlplanev1.KThreesControlPlane, error) {
	name := controlplanev1.ControlPlaneName(cluster)
	if name == "" {
		return nil, nil
	}
	kcp := &controlplanev1.KThreesControlPlane{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: name}, kcp); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading KThreesControlPlane: %w", err)
	}
	return kcp, nil
}

func server(m *clusterv1.Machine) restoreplan.Server {
	s := restoreplan.Server{
		Name:                 m.Name,
		Created:              m.CreationTimestamp.Time,
		Deleting:             !m.DeletionTimestamp.IsZero(),
		RestoreOf:            m.Annotations[controlplanev1.EtcdRestoreAnnotation],
		Ready:                conditions.IsTrue(m, clusterv1.ReadyCondition),
		HasNode:              m.Status.NodeRef.IsDefined(),
		NodeName:             m.Status.NodeRef.Name,
		Outdated:             conditions.IsFalse(m, clusterv1.MachineUpToDateCondition),
		UpdatingInPlace:      controlplane.UpdatingInPlace(m),
		MarkedForRemediation: conditions.IsFalse(m, clusterv1.MachineOwnerRemediatedCondition),
	}
	if c := conditions.Get(m, clusterv1.ReadyCondition); c != nil && c.Status != "True" {
		s.Status = c.Message
	}
	return s
}
