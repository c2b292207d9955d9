package sim

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
)

// The SimCluster's condition about its workload API.
const (
	workloadAPIAvailableCondition = "WorkloadAPIAvailable"
	apiServingReason              = "Serving"
	apiWaitingReason              = "WaitingForFirstServer"
	quorumLostReason              = "EtcdQuorumLost"
)

// clusterReconciler gives a SimCluster its endpoint and reports its workload cluster.
type clusterReconciler struct {
	p *Provider
}

func (r *clusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	c := r.p.Client
	sc := &simv1.SimCluster{}
	if err := c.Get(ctx, req.NamespacedName, sc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cluster, err := util.GetOwnerCluster(ctx, c, sc.ObjectMeta)
	if err != nil || cluster == nil {
		// The Cluster sets itself as owner; that update brings the SimCluster back.
		return ctrl.Result{}, err
	}
	if annotations.IsPaused(cluster, sc) {
		return ctrl.Result{}, nil
	}
	helper, err := patch.NewHelper(sc, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		retErr = errors.Join(retErr, helper.Patch(ctx, sc, patch.WithOwnedConditions{Conditions: []string{
			clusterv1.ReadyCondition, workloadAPIAvailableCondition,
		}}))
	}()
	key := client.ObjectKeyFromObject(cluster)
	if !sc.DeletionTimestamp.IsZero() {
		if err := r.p.forget(key); err != nil {
			return ctrl.Result{}, fmt.Errorf("stopping the workload cluster: %w", err)
		}
		controllerutil.RemoveFinalizer(sc, simv1.SimClusterFinalizer)
		return ctrl.Result{}, nil
	}
	controllerutil.AddFinalizer(sc, simv1.SimClusterFinalizer)

	ep := &sc.Spec.ControlPlaneEndpoint
	if ep.Host == "" {
		port, err := r.p.reservePort(key)
		if err != nil {
			return ctrl.Result{}, err
		}
		ep.Host, ep.Port = "127.0.0.1", int32(port)
	}
	wc := r.p.ensureCluster(key, client.ObjectKeyFromObject(sc), int(ep.Port))
	if r.p.wantsSUC(sc) {
		if err := wc.ensureSUC(ctx); err != nil {
			return ctrl.Result{}, err
		}
	}

	sc.Status.Initialization.Provisioned = ptr.To(true)
	sc.Status.EtcdMembers = wc.memberNames()
	sc.Status.Datastore = wc.datastoreAddress()
	conditions.Set(sc, metav1.Condition{Type: clusterv1.ReadyCondition, Status: metav1.ConditionTrue, Reason: clusterv1.ReadyReason})
	switch up, lost := wc.status(); {
	case lost:
		conditions.Set(sc, metav1.Condition{Type: workloadAPIAvailableCondition, Status: metav1.ConditionFalse, Reason: quorumLostReason,
			Message: "etcd lost quorum: too many servers went away before leaving etcd"})
	case up:
		conditions.Set(sc, metav1.Condition{Type: workloadAPIAvailableCondition, Status: metav1.ConditionTrue, Reason: apiServingReason})
	default:
		conditions.Set(sc, metav1.Condition{Type: workloadAPIAvailableCondition, Status: metav1.ConditionFalse, Reason: apiWaitingReason})
	}
	return ctrl.Result{}, nil
}
