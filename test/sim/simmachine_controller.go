package sim

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

	"github.com/capk3s/capk3s/test/envtest"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// Reasons of a SimMachine's Ready condition.
const (
	waitingForBootstrapDataReason = "WaitingForBootstrapData"
	waitingForClusterReason       = "WaitingForClusterInfrastructure"
	waitingForFirstServerReason   = "WaitingForFirstServer"
	bootstrapDataInvalidReason    = "BootstrapDataInvalid"
	joinRefusedReason             = "JoinRefused"
	datastoreUnreachableReason    = "DatastoreUnreachable"
	apiUnavailableReason          = "WorkloadAPIUnavailable"
	joinedReason                  = "Joined"
)

// retryJoin is how often a machine retries a join that waits for its cluster, as
// k3s retries on a timer.
const retryJoin = 2 * time.Second

// machineReconciler boots a SimMachine from its bootstrap data.
type machineReconciler struct {
	p *Provider
}

func (r *machineReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	c := r.p.Client
	sm := &simv1.SimMachine{}
	if err := c.Get(ctx, req.NamespacedName, sm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	machine, err := util.GetOwnerMachine(ctx, c, sm.ObjectMeta)
	if err != nil || machine == nil {
		// The Machine sets itself as owner; that update brings the SimMachine back.
		return ctrl.Result{}, err
	}
	cluster, err := util.GetClusterFromMetadata(ctx, c, machine.ObjectMeta)
	if err != nil {
		return ctrl.Result{}, err
	}
	if annotations.IsPaused(cluster, sm) {
		return ctrl.Result{}, nil
	}
	helper, err := patch.NewHelper(sm, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		retErr = errors.Join(retErr, helper.Patch(ctx, sm, patch.WithOwnedConditions{Conditions: []string{clusterv1.ReadyCondition, nodeReadyCondition, certificatesCondition}}))
	}()
	wc := r.p.cluster(client.ObjectKeyFromObject(cluster))
	if !sm.DeletionTimestamp.IsZero() {
		// A server that is still an etcd member goes down with its machine.
		if wc != nil && sm.Status.Role == roleServer && sm.Status.NodeName != "" {
			if err := wc.serverGone(sm.Status.NodeName); err != nil {
				return ctrl.Result{}, err
			}
		}
		controllerutil.RemoveFinalizer(sm, simv1.SimMachineFinalizer)
		return ctrl.Result{}, nil
	}
	controllerutil.AddFinalizer(sm, simv1.SimMachineFinalizer)
	if ptr.Deref(sm.Status.Initialization.Provisioned, false) {
		return r.keepRunning(ctx, sm, wc, cluster)
	}
	if c := conditions.Get(sm, clusterv1.ReadyCondition); c != nil && c.Reason == restoreFailedReason {
		// cloud-init runs the data's commands once per instance, and the data starts
		// k3s only after its cluster-reset restore succeeded: a machine whose restore
		// failed never tries again, even once the snapshot is readable (a real
		// machine's k3s service is never started).
		return ctrl.Result{}, nil
	}
	if machine.Spec.Bootstrap.DataSecretName == nil {
		notReady(sm, waitingForBootstrapDataReason, "")
		return ctrl.Result{}, nil
	}
	if wc == nil {
		notReady(sm, waitingForClusterReason, "the SimCluster has no endpoint yet")
		return ctrl.Result{RequeueAfter: retryJoin}, nil
	}
	result, err := r.boot(ctx, sm, machine, wc)
	if err != nil || !ptr.Deref(sm.Status.Initialization.Provisioned, false) {
		return result, err
	}
	// A machine annotated before it joined shows its fault from the start.
	return r.keepRunning(ctx, sm, wc, cluster)
}

// keepRunning is what a running machine does: its certificates and their monitor, its
// Node's health as annotated, and a server's periodic etcd snapshots.
func (r *machineReconciler) keepRunning(ctx context.Context, sm *simv1.SimMachine, wc *workloadCluster, cluster *clusterv1.Cluster) (ctrl.Result, error) {
	noticeRestart(sm, wc)
	// Certificates before the Node: an expired kubelet certificate shows in its health.
	certsNext, err := r.keepCertificates(ctx, sm, wc, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := wc.reportAfterRestore(ctx, sm.Status.NodeName); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.keepNodeHealth(ctx, sm, wc); err != nil || wc == nil || sm.Status.Role != roleServer || sm.Status.NodeName == "" {
		return ctrl.Result{RequeueAfter: certsNext}, err
	}
	next, err := wc.nextSnapshot(ctx, sm.Status.NodeName, r.p.SnapshotInterval, time.Now())
	return ctrl.Result{RequeueAfter: soonest(next, certsNext)}, err
}

// soonest is the shorter of two waits, 0 meaning none.
func soonest(a, b time.Duration) time.Duration {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// boot does what the machine would: read the data, start k3s (the first server
// starts the cluster), join, and register the Node.
func (r *machineReconciler) boot(ctx context.Context, sm *simv1.SimMachine, machine *clusterv1.Machine, wc *workloadCluster) (ctrl.Result, error) {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: machine.Namespace, Name: *machine.Spec.Bootstrap.DataSecretName}
	if err := r.p.Client.Get(ctx, key, secret); err != nil {
		return ctrl.Result{}, fmt.Errorf("reading the bootstrap data: %w", err)
	}
	raw := secret.Data["value"]
	b, err := readBootData(raw, string(secret.Data["format"]))
	if err == nil {
		err = b.checkStatic()
	}
	if err != nil {
		// The machine would run this data and fail the same way each time.
		notReady(sm, bootFailureReason(err), err.Error())
		return ctrl.Result{}, nil
	}
	installed, err := installedRelease(b, sm)
	if err != nil {
		notReady(sm, bootstrapDataInvalidReason, err.Error())
		return ctrl.Result{}, nil
	}
	if err := b.playVerification(installed); err != nil {
		var v *verificationError
		if errors.As(err, &v) {
			notReady(sm, installVerificationFailedReason, err.Error())
		} else {
			notReady(sm, bootstrapDataInvalidReason, err.Error())
		}
		return ctrl.Result{}, nil
	}
	sm.Status.Role, sm.Status.K3sVersion = b.install.role, installed
	restore, err := b.checkRestore()
	if err != nil {
		// k3s exits without restoring, and the data starts it only after a restore.
		notReady(sm, restoreFailedReason, err.Error())
		return ctrl.Result{}, nil
	}
	if b.clusterInit() || b.datastore() != "" {
		err := wc.initialize(ctx, machine.Name, b, restore)
		if errors.Is(err, k3smodel.ErrTokenMismatch) {
			// k3s exits; the same data fails the same way every time.
			notReady(sm, restoreFailedReason, err.Error())
			return ctrl.Result{}, nil
		}
		if errors.Is(err, envtest.ErrDatastoreUnreachable) {
			// k3s waits for its datastore; the same data may get in once it is up.
			notReady(sm, datastoreUnreachableReason, err.Error())
			return ctrl.Result{RequeueAfter: retryJoin}, nil
		}
		if err != nil {
			notReady(sm, joinRefusedReason, err.Error())
			return ctrl.Result{}, err
		}
	}
	cl, s, err := wc.ready()
	switch {
	case errors.Is(err, errNotInitialized):
		notReady(sm, waitingForFirstServerReason, "")
		return ctrl.Result{RequeueAfter: retryJoin}, nil
	case err != nil:
		notReady(sm, apiUnavailableReason, err.Error())
		return ctrl.Result{RequeueAfter: retryJoin}, nil
	}
	// A datastore server is checked too, including the one that started the API: its
	// data matches the secrets it set up, and the others' must match them.
	if !b.clusterInit() {
		if err := b.checkJoin(s, wc.reaches, raw); err != nil {
			// k3s keeps retrying, but the same data never gets in.
			notReady(sm, joinRefusedReason, err.Error())
			return ctrl.Result{}, nil
		}
	}
	if err := b.checkFlannelKernel(s, sm.Spec.KernelWithoutWireGuard); err != nil {
		// k3s exits once flannel starts, after every restart (flannel.go).
		notReady(sm, bootFailureReason(err), err.Error())
		return ctrl.Result{}, nil
	}
	providerID := "sim://" + sm.Namespace + "/" + sm.Name
	n, err := nodeFor(b, machine.Name, providerID)
	if err == nil {
		n.version = installed
		n.providerID, err = nodeProviderID(b, s, n.name, providerID)
	}
	if err != nil {
		notReady(sm, bootstrapDataInvalidReason, err.Error())
		return ctrl.Result{}, nil
	}
	if n.role == roleServer && s.datastore == "" {
		if n.etcdMember, err = wc.addMember(n.name); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := n.register(ctx, cl, wc); err != nil {
		return ctrl.Result{}, err
	}
	if n.role == roleServer && s.datastore == "" {
		wc.serverSnapshotSettings(n.name, b.snapshotSettings())
	}
	if plan := b.snapshotPlan(); plan != nil && n.role == roleServer && s.datastore == "" {
		now := time.Now()
		if err := plan.take(ctx, wc, cl, n.name, now); err != nil {
			return ctrl.Result{}, err
		}
		wc.snapshotted(n.name, plan, now)
	}
	if n.role == roleServer {
		wc.serverUp(n.name, n.address, b.supervisorPort)
		wc.serverSigns(n.name, b.signingLifetime())
	}
	sm.Spec.ProviderID = providerID
	sm.Status.NodeName = n.name
	sm.Status.Addresses = []clusterv1.MachineAddress{
		{Type: clusterv1.MachineInternalIP, Address: n.address},
		{Type: clusterv1.MachineHostName, Address: n.name},
	}
	sm.Status.Initialization.Provisioned = ptr.To(true)
	conditions.Set(sm, metav1.Condition{Type: clusterv1.ReadyCondition, Status: metav1.ConditionTrue, Reason: joinedReason, Message: b.droppedNote()})
	return ctrl.Result{}, nil
}

func notReady(sm *simv1.SimMachine, reason, message string) {
	conditions.Set(sm, metav1.Condition{Type: clusterv1.ReadyCondition, Status: metav1.ConditionFalse, Reason: reason, Message: message})
}

// readBootData reads bootstrap data in the format its Secret names.
func readBootData(raw []byte, format string) (*bootData, error) {
	switch format {
	case "", "cloud-config":
		return parseCloudConfig(raw)
	case "ignition":
		return parseIgnition(raw)
	default:
		return nil, fmt.Errorf("bootstrap data format %q is not one the simulator boots", format)
	}
}
