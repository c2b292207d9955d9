package controlplane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	runtimeclient "sigs.k8s.io/cluster-api/exp/runtime/client"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/paused"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/renewalplan"
	"github.com/capk3s/capk3s/internal/controlplane/serverplan"
	"github.com/capk3s/capk3s/internal/initguard"
	"github.com/capk3s/capk3s/internal/pacing"
	"github.com/capk3s/capk3s/internal/secretcache"
	"github.com/capk3s/capk3s/internal/staleconditions"
	"github.com/capk3s/capk3s/internal/statuspatch"
	"github.com/capk3s/capk3s/internal/token"
	controlplanewebhooks "github.com/capk3s/capk3s/internal/webhooks/controlplane"
)

// +kubebuilder:rbac:groups=controlplane.cluster.x-k8s.io,resources=kthreescontrolplanes;kthreescontrolplanes/status;kthreescontrolplanes/finalizers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=bootstrap.cluster.x-k8s.io,resources=kthreesconfigs,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;clusters/status,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machines;machines/status,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=*,verbs=get;list;watch;create;update;patch;delete
// CRDs: converting a KThreesControlPlane down to v1beta1 reads its infrastructure
// template's CRD (metadata only) for the apiVersion to write; only this manager does.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconciler reconciles KThreesControlPlanes.
type Reconciler struct {
	Client client.Client
	// APIReader reads past the cache, for decisions a lagging cache must not make:
	// whether a missing join token may be generated anew. SetupWithManager defaults it
	// to the manager's API reader.
	APIReader client.Reader
	// Secrets reads the cluster's Secrets (CAs, kubeconfig, join token) that every pass
	// reads, from a cache of cluster-labelled Secrets, live where the cache has none;
	// each pass reads through its own secretcache.PassReader, so that the Secrets a
	// new cluster lacks are confirmed missing by one live list, not a read each.
	// SetupWithManager makes one when nil, limited to WatchNamespace, that knows from
	// the manager's metadata watch of all Secrets which unlabelled ones exist.
	Secrets *secretcache.Reader
	// WatchNamespace, when set, is the one namespace the manager watches (--namespace).
	WatchNamespace string
	// ClusterCache gives cached access to workload clusters; it is the only way this
	// controller reaches them.
	ClusterCache clustercache.ClusterCache
	// WatchFilterValue, when set, limits reconciling to objects labelled
	// cluster.x-k8s.io/watch-filter=<value>.
	WatchFilterValue string
	// RuntimeClient calls CAPI Runtime Extensions: the update extensions asked whether a
	// server can be updated in place (inplace.go). The manager sets it only with the
	// InPlaceUpdates feature gate; nil means servers are always replaced.
	RuntimeClient runtimeclient.Client
	// RenewalImage is the image, without tag, of the system-upgrade-controller Plans
	// that restart k3s to renew a node's certificates (renewal.go): the in-place
	// extension's upgrade image (--runtime-extension-upgrade-image); "" is its default.
	RenewalImage string
	// MinPassInterval, when positive, runs at most one pass per control plane per
	// interval: a request that comes sooner after the last pass started waits for the
	// rest of it, with whatever else arrives meanwhile (internal/pacing). 0 runs a pass
	// for every request, controller-runtime's default.
	MinPassInterval time.Duration

	controller controller.Controller
	// writes skips passes that start from an object this controller has already
	// written over (ownwrites.go); set up by SetupWithManager.
	writes *ownWrites
	// machineApplies skips applying a server's UpToDate condition again from a copy
	// older than the last apply (machine_uptodate.go); set up by SetupWithManager.
	machineApplies *machineApplies
	// expectations holds steps on the servers back while the Machine cache lags behind
	// this controller's own creates and deletes (machine_expectations.go); set up by
	// SetupWithManager.
	expectations *machineExpectations
	// leftovers are the control planes whose leftover server objects this process has
	// swept (leftovers.go); set up by SetupWithManager.
	leftovers *leftoverSweeps
}

// SetupWithManager registers the controller. Owned Secrets are watched by metadata
// only: a deleted token Secret must wake the control plane, but caching every
// Secret's data cluster-wide would cost memory and widen what the manager holds.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	if r.ClusterCache == nil {
		return errors.New("the KThreesControlPlane controller needs a ClusterCache")
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Secrets == nil {
		secrets, err := secretcache.New(ctx, mgr, r.WatchNamespace, CachedSecretPurposes())
		if err != nil {
			return err
		}
		// The metadata informer is the one Owns(&corev1.Secret{}, builder.OnlyMetadata)
		// below runs anyway; reading it starts no other.
		r.Secrets = secrets.WithSecretMetadata(mgr.GetCache())
	}
	log := ctrl.LoggerFrom(ctx)
	b := ctrl.NewControllerManagedBy(mgr).
		For(&controlplanev1.KThreesControlPlane{}).
		Owns(&corev1.Secret{}, builder.OnlyMetadata).
		// A token Secret that another controller manages (token.go) is not owned, yet its
		// changes matter: its value arriving or changing. Same metadata informer as above.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.tokenSecretToControlPlane), builder.OnlyMetadata).
		Owns(&clusterv1.Machine{}).
		// Agents' certificate reports: the control plane renews agents too (renewal.go).
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(r.agentToControlPlane), builder.WithPredicates(agentCertificatesChanged())).
		// The snapshot a rollout waits for (rollout_snapshot.go).
		Watches(&controlplanev1.KThreesEtcdSnapshot{}, handler.EnqueueRequestsFromMapFunc(r.rolloutSnapshotToControlPlane)).
		Watches(&clusterv1.Cluster{},
			handler.EnqueueRequestsFromMapFunc(clusterToControlPlane),
			builder.WithPredicates(predicates.ClusterPausedTransitionsOrInfrastructureProvisioned(mgr.GetScheme(), log)),
		).
		// Connection changes to the workload cluster (first contact, lost, back).
		WatchesRawSource(r.ClusterCache.GetClusterSource("kthreescontrolplane", clusterToControlPlane)).
		// A restore that lets go of the servers (restore_hold.go).
		Watches(&controlplanev1.KThreesEtcdRestore{}, handler.EnqueueRequestsFromMapFunc(r.restoreToControlPlane))
	// The same Secrets once more, as the Secret cache sees them: a pass woken by the
	// metadata watch may still read the cache's older copy; this wakes it again when
	// the cache has caught up.
	for _, h := range []handler.EventHandler{
		handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &controlplanev1.KThreesControlPlane{}, handler.OnlyControllerOwner()),
		handler.EnqueueRequestsFromMapFunc(r.tokenSecretToControlPlane),
	} {
		if src := r.Secrets.Source(h); src != nil {
			b = b.WatchesRawSource(src)
		}
	}
	reconciler, options := pacing.Wrap(r, r.MinPassInterval, options)
	c, err := b.WithOptions(options).
		WithEventFilter(predicates.ResourceHasFilterLabel(mgr.GetScheme(), log, r.WatchFilterValue)).
		Build(reconciler)
	if err != nil {
		return err
	}
	r.controller = c
	r.initMemory()
	return nil
}

// initMemory sets up what the Reconciler remembers from pass to pass of this process:
// its own writes, which its caches may lag behind.
func (r *Reconciler) initMemory() {
	r.writes = newOwnWrites()
	r.machineApplies = newMachineApplies()
	r.expectations = newMachineExpectations()
	r.leftovers = newLeftoverSweeps()
}

// clusterToControlPlane maps a Cluster to the KThreesControlPlane it references.
func clusterToControlPlane(_ context.Context, o client.Object) []reconcile.Request {
	cluster, ok := o.(*clusterv1.Cluster)
	if !ok {
		return nil
	}
	name := controlplanev1.ControlPlaneName(cluster)
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: cluster.Namespace, Name: name}}}
}

// tokenSecretToControlPlane maps a Secret named like a cluster's join token to the
// control plane of that cluster, if the Cluster exists.
func (r *Reconciler) tokenSecretToControlPlane(ctx context.Context, o client.Object) []reconcile.Request {
	clusterName, ok := strings.CutSuffix(o.GetName(), token.SecretName(""))
	if !ok || clusterName == "" {
		return nil
	}
	cluster := &clusterv1.Cluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: clusterName}, cluster); err != nil {
		return nil
	}
	return clusterToControlPlane(ctx, cluster)
}

// Reconcile runs one pass for a KThreesControlPlane.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	log := ctrl.LoggerFrom(ctx)

	kcp := &controlplanev1.KThreesControlPlane{}
	if err := r.Client.Get(ctx, req.NamespacedName, kcp); err != nil {
		if apierrors.IsNotFound(err) {
			r.writes.forget(req.NamespacedName)
			r.expectations.forget(req.NamespacedName)
			r.leftovers.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading KThreesControlPlane: %w", err)
	}
	if !r.handles(kcp) {
		return ctrl.Result{}, nil
	}
	if r.writes.isReplaced(req.NamespacedName, kcp.ResourceVersion) {
		log.V(4).Info("Skipping a pass: the cache has not caught up with this controller's last write yet", "resourceVersion", kcp.ResourceVersion)
		return ctrl.Result{}, nil
	}

	cluster, err := util.GetOwnerCluster(ctx, r.Client, kcp.ObjectMeta)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("reading owner Cluster: %w", err)
	}
	if cluster == nil {
		// The Cluster controller sets the owner reference; the Cluster watch wakes us then.
		log.V(4).Info("Waiting for the Cluster to own this control plane")
		return ctrl.Result{}, nil
	}
	log = log.WithValues("Cluster", client.ObjectKeyFromObject(cluster))
	ctx = ctrl.LoggerInto(ctx, log)

	// Before any status write: one condition left by other software makes them all invalid.
	if err := staleconditions.Drop(ctx, r.Client, kcp, ownedConditions); err != nil {
		return ctrl.Result{}, err
	}
	if annotations.IsPaused(cluster, kcp) {
		// Paused=True is written at once, and nothing else is done.
		_, _, err := paused.EnsurePausedCondition(ctx, r.Client, cluster, kcp)
		return ctrl.Result{}, err
	}

	// The whole status goes in one write at the end of the pass, Paused=False
	// included: CAPI's helper would write it on its own first and end the pass, one
	// more write and one more pass for every new or unpaused control plane.
	pass := statuspatch.New(kcp)
	conditions.Set(kcp, metav1.Condition{Type: clusterv1.PausedCondition, Status: metav1.ConditionFalse, Reason: clusterv1.NotPausedReason})
	// A control plane stored by cluster-api-k3s never went through the defaulting
	// webhook: its machine template may still be in the old shape. The deferred
	// patch stores it moved.
	controlplanewebhooks.MoveDeprecatedMachineTemplate(&kcp.Spec.MachineTemplate, kcp.Namespace)
	var seen observed
	defer func() {
		setStatus(cluster, kcp, seen)
		if !seen.machineCacheBehind {
			setDatastoreHealth(kcp, seen)
			setEtcdSnapshots(kcp, seen)
			setCertificatesStatus(kcp, seen)
		}
		kcp.Status.ObservedGeneration = kcp.Generation
		if seen.storedVersion != "" {
			pass.Advance(seen.storedVersion)
		}
		replaced, err := pass.Write(ctx, r.Client, kcp)
		r.writes.record(req.NamespacedName, replaced)
		if err != nil {
			reterr = errors.Join(reterr, fmt.Errorf("patching KThreesControlPlane: %w", err))
		}
	}()

	if !kcp.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, cluster, kcp, &seen)
	}
	setTrueWhen(kcp, controlplanev1.DeletingCondition, false, "", controlplanev1.NotDeletingReason, "")
	// The finalizer keeps the control plane until its servers are gone; the deferred
	// patch writes it before any server exists.
	controllerutil.AddFinalizer(kcp, controlplanev1.KThreesControlPlaneFinalizer)

	result, err := r.reconcile(ctx, cluster, kcp, &seen)
	now := time.Now()
	result = soonest(result, seen.leftoversWait)
	result = soonest(result, serverplan.UntilRolloutAfter(kcp, now))
	result = soonest(result, seen.renewal.untilReplaceNext(now))
	renewalMachines := append(seen.machines.UnsortedList(), seen.renewal.workers.UnsortedList()...)
	return soonest(result, renewalplan.UntilDue(renewalMachines, kcp.Spec.Rollout.Before.CertificatesExpiryDays, now)), err
}

// startedCheck is one pass's answer to "may a server already hold the cluster's
// secrets?" (initguard.Started, which reads live): asked only when a CA or the token
// is missing, and then once for all of them.
func (r *Reconciler) startedCheck(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane) func() (string, error) {
	return sync.OnceValues(func() (string, error) {
		return initguard.Started(ctx, r.Client, r.APIReader, cluster, kcp)
	})
}

// reconcile runs the steps in order; each returns early when its work is not done,
// and a watch brings the control plane back when what it waits for changes.
func (r *Reconciler) reconcile(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, seen *observed) (ctrl.Result, error) {
	if !isTrue(cluster.Status.Initialization.InfrastructureProvisioned) {
		return ctrl.Result{}, nil
	}
	serversMayHoldSecrets := r.startedCheck(ctx, cluster, kcp)
	secrets := r.passSecrets(cluster)
	cas, err := r.reconcileCertificates(ctx, cluster, kcp, secrets, serversMayHoldSecrets)
	if err != nil {
		return ctrl.Result{}, err
	}
	seen.authorities, seen.caCerts = caAuthorities(cas), knownCAsOf(cas)
	tokenAvailable, err := r.reconcileToken(ctx, cluster, kcp, secrets, serversMayHoldSecrets)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !cluster.Spec.ControlPlaneEndpoint.IsValid() {
		return ctrl.Result{}, nil
	}
	if err := r.reconcileKubeconfig(ctx, cluster, kcp, secrets, cas); err != nil {
		return ctrl.Result{}, err
	}
	machines, err := r.controlPlaneMachines(ctx, cluster, kcp)
	if err != nil {
		return ctrl.Result{}, err
	}
	if wait, err := r.waitForMachineCache(ctx, cluster, kcp, machines, seen); err != nil || wait.RequeueAfter > 0 {
		return wait, err
	}
	seen.machines = machines
	seen.leftoversWait = r.sweepLeftovers(ctx, cluster, kcp, machines)
	if seen.nodes, err = r.observeNodes(ctx, cluster, kcp, machines); err != nil {
		return ctrl.Result{}, err
	}
	// Before the propagation: a server replaced for its certificates is not up to
	// date. A renewal that cannot be decided now leaves the rest of the pass to run.
	renewalErr := r.observeRenewal(ctx, cluster, kcp, seen)
	if seen.objects, err = r.propagateWith(ctx, cluster, kcp, machines, seen.renewal); err != nil {
		return ctrl.Result{}, err
	}
	r.observeMismatches(ctx, cluster, seen)
	if renewalErr != nil {
		return ctrl.Result{}, renewalErr
	}
	r.observeEtcdSnapshots(ctx, client.ObjectKeyFromObject(cluster), kcp, seen)
	r.observeCertificateExpiry(ctx, cluster, kcp, seen)
	if held, err := r.heldByRestore(ctx, cluster, kcp, seen); err != nil || held {
		return ctrl.Result{}, err
	}
	if err := r.reconcileEtcdMembership(ctx, cluster, kcp, seen); err != nil {
		return ctrl.Result{}, err
	}
	result, err := r.reconcileServers(ctx, cluster, kcp, tokenAvailable, seen)
	if err == nil && seen.removalInFlight {
		result = soonest(result, removalPoll)
	}
	return result, err
}

// reconcileServers takes the pass's one operation on the servers. Completing an
// in-place update trigger comes first; then remediation, also of a server that is
// being updated in place, as in KCP; a remediation that acted (or waits for its
// retry period) is the pass's step. Next, in-place updates under way hold scaling
// and rollout (inplace_hold.go); otherwise scaling goes on, which also creates a
// remediated server's replacement. A wait that no watch ends (a health check to look
// again, CAPI to start an update, a cache to catch up) asks to be woken.
func (r *Reconciler) reconcileServers(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, tokenAvailable bool, seen *observed) (ctrl.Result, error) {
	seen.updatingInPlace = updatingServers(seen.machines)
	if completing, err := r.completeInPlaceTriggers(ctx, cluster, kcp, seen); err != nil || completing {
		return ctrl.Result{}, err
	}
	done, result, err := r.reconcileRemediation(ctx, cluster, kcp, seen)
	if err != nil || done {
		return result, err
	}
	if hold, wait := inPlaceHold(ctx, seen, time.Now()); hold {
		return soonest(result, wait), nil
	}
	// A k3s restart renewing a node's certificates is a step on the cluster too: one
	// at a time, and nothing else meanwhile (renewal.go).
	if busy, err := r.followRenewals(ctx, cluster, seen); err != nil || busy {
		return soonest(result, renewalPoll), err
	}
	next, err := r.reconcileReplicas(ctx, cluster, kcp, tokenAvailable, seen)
	if err != nil {
		return ctrl.Result{}, err
	}
	return soonest(result, next.RequeueAfter), nil
}

func isTrue(b *bool) bool { return b != nil && *b }
