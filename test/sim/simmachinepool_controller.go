package sim

import (
	"context"
	"errors"
	"slices"
	"sync"

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
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
)

// Reasons of a SimMachinePool's Ready condition, besides the SimMachine's.
const (
	poolScalingReason   = "Scaling"
	poolRunningReason   = "Running"
	poolNotAgentsReason = "NotAgents"
)

// poolReconciler keeps a SimMachinePool's instances, as a cloud's autoscaling group:
// its MachinePool's replicas, each booted from the pool's data Secret as it was when
// the instance started. When the data changes (a new k3s version, a new config), the
// instances are replaced one at a time: one new instance boots and joins, then one
// that runs the old data goes, and so on (a surge of one, no unavailability). A new
// instance that cannot join stops the replacement, and the old ones keep running.
type poolReconciler struct {
	p *Provider

	// mu guards instances: the instances each pool runs, as the cloud knows them. The
	// SimMachinePool's status shows them, but the cache may hand a pass an older
	// status than the last pass wrote, which would boot the same instances twice.
	mu        sync.Mutex
	instances map[client.ObjectKey][]simv1.SimMachinePoolInstance
}

// running is what the pool runs, seeded from the status the first time this
// reconciler sees the pool (after a restart, or a move to another manager).
func (r *poolReconciler) running(pool *simv1.SimMachinePool) []simv1.SimMachinePoolInstance {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.instances == nil {
		r.instances = map[client.ObjectKey][]simv1.SimMachinePoolInstance{}
	}
	key := client.ObjectKeyFromObject(pool)
	if _, ok := r.instances[key]; !ok {
		r.instances[key] = slices.Clone(pool.Status.Instances)
	}
	return slices.Clone(r.instances[key])
}

// record stores what the pool runs now, at once: an instance booted is running
// whether or not the status patch that follows succeeds.
func (r *poolReconciler) record(pool *simv1.SimMachinePool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := client.ObjectKeyFromObject(pool)
	if pool.Status.Instances == nil && !pool.DeletionTimestamp.IsZero() {
		delete(r.instances, key)
		return
	}
	r.instances[key] = slices.Clone(pool.Status.Instances)
}

func (r *poolReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	c := r.p.Client
	pool := &simv1.SimMachinePool{}
	if err := c.Get(ctx, req.NamespacedName, pool); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	mp, err := util.GetOwnerMachinePool(ctx, c, pool.ObjectMeta)
	if err != nil || mp == nil {
		// The MachinePool sets itself as owner; that update brings the pool back.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cluster, err := util.GetClusterByName(ctx, c, mp.Namespace, mp.Spec.ClusterName)
	if err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if annotations.IsPaused(cluster, pool) {
		return ctrl.Result{}, nil
	}
	helper, err := patch.NewHelper(pool, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	pool.Status.Instances = r.running(pool)
	defer func() {
		publish(pool)
		retErr = errors.Join(retErr, helper.Patch(ctx, pool, patch.WithOwnedConditions{Conditions: []string{clusterv1.ReadyCondition}}))
	}()
	wc := r.p.cluster(client.ObjectKeyFromObject(cluster))
	if !pool.DeletionTimestamp.IsZero() {
		for len(pool.Status.Instances) > 0 {
			if err := r.remove(ctx, pool, wc, len(pool.Status.Instances)-1); err != nil {
				return ctrl.Result{}, err
			}
		}
		controllerutil.RemoveFinalizer(pool, simv1.SimMachinePoolFinalizer)
		return ctrl.Result{}, nil
	}
	controllerutil.AddFinalizer(pool, simv1.SimMachinePoolFinalizer)
	if mp.Spec.Template.Spec.Bootstrap.DataSecretName == nil {
		poolNotReady(pool, waitingForBootstrapDataReason, "")
		return ctrl.Result{}, nil
	}
	if wc == nil {
		poolNotReady(pool, waitingForClusterReason, "the SimCluster has no endpoint yet")
		return ctrl.Result{RequeueAfter: retryJoin}, nil
	}
	data, err := readPoolData(ctx, c, mp.Namespace, *mp.Spec.Template.Spec.Bootstrap.DataSecretName)
	if err != nil {
		return ctrl.Result{}, err
	}
	return r.converge(ctx, pool, wc, data, ptr.Deref(mp.Spec.Replicas, 1))
}

// converge boots and removes instances until the pool runs replicas instances of the
// current data, or an instance cannot boot.
func (r *poolReconciler) converge(ctx context.Context, pool *simv1.SimMachinePool, wc *workloadCluster, data *poolData, replicas int32) (ctrl.Result, error) {
	for {
		fresh, stale := splitInstances(pool.Status.Instances, data.hash)
		total := int32(len(pool.Status.Instances))
		switch {
		case int32(len(fresh)) < replicas && total <= replicas:
			inst, reason, msg, err := r.boot(ctx, pool.Namespace, pool.Name, pool.Spec.KernelWithoutWireGuard, wc, data)
			if err != nil || reason != "" {
				poolNotReady(pool, reason, msg)
				if reason == waitingForFirstServerReason || reason == apiUnavailableReason {
					return ctrl.Result{RequeueAfter: retryJoin}, err
				}
				// The same data fails the same way; a change of it wakes the pool.
				return ctrl.Result{}, err
			}
			pool.Status.Instances = append(pool.Status.Instances, inst)
			r.record(pool)
		case total > replicas:
			// The oldest instance of old data goes first; without one, the newest.
			victim := len(pool.Status.Instances) - 1
			if len(stale) > 0 {
				victim = stale[0]
			}
			if err := r.remove(ctx, pool, wc, victim); err != nil {
				return ctrl.Result{}, err
			}
		default:
			if int32(len(fresh)) == replicas {
				pool.Status.Initialization.Provisioned = ptr.To(true)
				conditions.Set(pool, metav1.Condition{Type: clusterv1.ReadyCondition, Status: metav1.ConditionTrue, Reason: poolRunningReason})
			}
			return ctrl.Result{}, nil
		}
		poolNotReady(pool, poolScalingReason, "")
	}
}

// remove stops an instance: its Node goes, as a cloud's node lifecycle removes the
// Node of a deleted instance.
func (r *poolReconciler) remove(ctx context.Context, pool *simv1.SimMachinePool, wc *workloadCluster, i int) error {
	inst := pool.Status.Instances[i]
	if wc != nil {
		if err := removeNode(ctx, wc, inst.NodeName); err != nil {
			return err
		}
	}
	pool.Status.Instances = append(pool.Status.Instances[:i:i], pool.Status.Instances[i+1:]...)
	if len(pool.Status.Instances) == 0 {
		pool.Status.Instances = nil
	}
	r.record(pool)
	ctrl.LoggerFrom(ctx).Info("Removed pool instance", "instance", inst.Name)
	return nil
}

// splitInstances gives the indexes of the instances booted from the data of hash and
// of the others, oldest first.
func splitInstances(instances []simv1.SimMachinePoolInstance, hash string) (fresh, stale []int) {
	for i, inst := range instances {
		if inst.DataHash == hash {
			fresh = append(fresh, i)
		} else {
			stale = append(stale, i)
		}
	}
	return fresh, stale
}

// publish writes the contract's fields from the instances: what CAPI's MachinePool
// copies (providerIDList, replicas) and reads (ready).
func publish(pool *simv1.SimMachinePool) {
	pool.Spec.ProviderIDList = nil
	for _, inst := range pool.Status.Instances {
		pool.Spec.ProviderIDList = append(pool.Spec.ProviderIDList, inst.ProviderID)
	}
	pool.Status.Replicas = ptr.To(int32(len(pool.Status.Instances)))
	if ptr.Deref(pool.Status.Initialization.Provisioned, false) {
		pool.Status.Ready = ptr.To(true)
	}
}

func poolNotReady(pool *simv1.SimMachinePool, reason, message string) {
	conditions.Set(pool, metav1.Condition{Type: clusterv1.ReadyCondition, Status: metav1.ConditionFalse, Reason: reason, Message: message})
}

// machinePoolToPool maps a MachinePool to its SimMachinePool.
func machinePoolToPool(_ context.Context, o client.Object) []reconcile.Request {
	mp, ok := o.(*clusterv1.MachinePool)
	if !ok {
		return nil
	}
	ref := mp.Spec.Template.Spec.InfrastructureRef
	if ref.APIGroup != simv1.GroupVersion.Group || ref.Kind != "SimMachinePool" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: mp.Namespace, Name: ref.Name}}}
}

// dataSecretToPools maps a bootstrap data Secret to the SimMachinePools whose
// MachinePool boots from it: its content changes in place when the pool's data does.
func (r *poolReconciler) dataSecretToPools(ctx context.Context, o client.Object) []reconcile.Request {
	pools := &clusterv1.MachinePoolList{}
	if err := r.p.Client.List(ctx, pools, client.InNamespace(o.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing MachinePools")
		return nil
	}
	var out []reconcile.Request
	for i := range pools.Items {
		mp := &pools.Items[i]
		if ptr.Deref(mp.Spec.Template.Spec.Bootstrap.DataSecretName, "") == o.GetName() {
			out = append(out, machinePoolToPool(ctx, mp)...)
		}
	}
	return out
}
