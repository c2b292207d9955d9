package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
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

	netnsv1 "github.com/capk3s/capk3s/test/realk3s/api/v1beta2"
	"github.com/capk3s/capk3s/test/realk3s/host"
)

// Reasons of a NetnsMachine's Ready condition.
const (
	waitingForBootstrapDataReason = "WaitingForBootstrapData"
	unknownVersionReason          = "NoK3sBinaryForVersion"
	bootFailedReason              = "BootFailed"
	waitingForNodeReason          = "WaitingForNode"
	nodeInitializedReason         = "NodeInitialized"
)

// nodePoll is how often a booted machine looks for its Node, as a cloud controller
// watches for new Nodes.
const nodePoll = 3 * time.Second

type machineReconciler struct{ p *Provider }

func (r *machineReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	c := r.p.Client
	nm := &netnsv1.NetnsMachine{}
	if err := c.Get(ctx, req.NamespacedName, nm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	helper, err := patch.NewHelper(nm, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		retErr = errors.Join(retErr, helper.Patch(ctx, nm, patch.WithOwnedConditions{Conditions: []string{clusterv1.ReadyCondition}}))
	}()
	if !nm.DeletionTimestamp.IsZero() {
		// As a cloud terminates an instance: at once, with whatever runs on it.
		if err := r.p.Layer.Stop(hostName(nm)); err != nil {
			return ctrl.Result{}, err
		}
		controllerutil.RemoveFinalizer(nm, netnsv1.NetnsMachineFinalizer)
		return ctrl.Result{}, nil
	}
	machine, err := util.GetOwnerMachine(ctx, c, nm.ObjectMeta)
	if err != nil || machine == nil {
		// The Machine sets itself as owner; that update brings the NetnsMachine back.
		return ctrl.Result{}, err
	}
	cluster, err := util.GetClusterFromMetadata(ctx, c, machine.ObjectMeta)
	if err != nil {
		return ctrl.Result{}, err
	}
	if annotations.IsPaused(cluster, nm) {
		return ctrl.Result{}, nil
	}
	controllerutil.AddFinalizer(nm, netnsv1.NetnsMachineFinalizer)
	if !ptr.Deref(nm.Status.Initialization.Provisioned, false) {
		if done, err := r.boot(ctx, nm, machine); err != nil || !done {
			return ctrl.Result{}, err
		}
	}
	found, err := r.p.initializeNode(ctx, cluster, nm)
	if err != nil {
		// The workload cluster may not answer yet (its first server is starting).
		setReady(nm, metav1.ConditionFalse, waitingForNodeReason, err.Error())
		return ctrl.Result{RequeueAfter: nodePoll}, nil
	}
	if !found {
		setReady(nm, metav1.ConditionFalse, waitingForNodeReason, "no Node named "+hostName(nm)+" yet")
		return ctrl.Result{RequeueAfter: nodePoll}, nil
	}
	setReady(nm, metav1.ConditionTrue, nodeInitializedReason, "")
	return ctrl.Result{}, nil
}

// boot starts the machine from its Machine's bootstrap data; it is done once the
// machine runs, as a cloud instance is provisioned once it boots.
func (r *machineReconciler) boot(ctx context.Context, nm *netnsv1.NetnsMachine, machine *clusterv1.Machine) (bool, error) {
	if machine.Spec.Bootstrap.DataSecretName == nil {
		setReady(nm, metav1.ConditionFalse, waitingForBootstrapDataReason, "")
		return false, nil
	}
	binary, ok := r.p.Binaries[machine.Spec.Version]
	if nm.Spec.K3sBinary != "" {
		binary, ok = r.p.Binaries[nm.Spec.K3sBinary]
	}
	if !ok {
		setReady(nm, metav1.ConditionFalse, unknownVersionReason, fmt.Sprintf("the layer has no k3s binary for %q", machine.Spec.Version))
		return false, nil
	}
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: nm.Namespace, Name: *machine.Spec.Bootstrap.DataSecretName}
	if err := r.p.Client.Get(ctx, key, secret); err != nil {
		return false, fmt.Errorf("bootstrap data: %w", err)
	}
	m, err := r.p.Layer.Start(host.MachineSpec{
		Name: hostName(nm), InstanceID: string(nm.UID), UserData: secret.Data["value"], K3sBinary: binary,
	})
	if err != nil {
		setReady(nm, metav1.ConditionFalse, bootFailedReason, err.Error())
		return false, err
	}
	nm.Spec.ProviderID = providerID(nm)
	nm.Status.Addresses = []clusterv1.MachineAddress{
		{Type: clusterv1.MachineInternalIP, Address: m.Address},
		{Type: clusterv1.MachineHostName, Address: m.Name},
	}
	nm.Status.Initialization.Provisioned = ptr.To(true)
	return true, nil
}

// hostName is the machine's host name and so its Node's name: the NetnsMachine's
// name, which Cluster API makes equal to its Machine's.
func hostName(nm *netnsv1.NetnsMachine) string { return nm.Name }

func providerID(nm *netnsv1.NetnsMachine) string {
	return "netns://" + nm.Namespace + "/" + nm.Name
}

func setReady(nm *netnsv1.NetnsMachine, status metav1.ConditionStatus, reason, message string) {
	conditions.Set(nm, metav1.Condition{Type: clusterv1.ReadyCondition, Status: status, Reason: reason, Message: message})
}
