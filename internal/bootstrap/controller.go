package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/paused"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/staleconditions"
	"github.com/capk3s/capk3s/internal/statuspatch"
)

// +kubebuilder:rbac:groups=bootstrap.cluster.x-k8s.io,resources=kthreesconfigs;kthreesconfigs/status,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;clusters/status;machines;machines/status;machinepools;machinepools/status,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconciler turns KThreesConfigs into bootstrap data Secrets.
type Reconciler struct {
	Client client.Client
	// WatchFilterValue, when set, limits reconciling to objects labelled
	// cluster.x-k8s.io/watch-filter=<value>.
	WatchFilterValue string
	// InstallScriptURL is where machines download the k3s install script from;
	// empty means k3s's official location.
	InstallScriptURL string
	// APIReader reads past the cache, to check that the cached config is current before
	// rendering (cachelag.go). SetupWithManager defaults it to the manager's API reader;
	// nil skips the check.
	APIReader client.Reader
	// Secrets reads the CA and join token Secrets (clustersecrets.go); SetupWithManager
	// makes a cache of cluster-labelled Secrets when nil, limited to WatchNamespace.
	Secrets client.Reader
	// WatchNamespace, when set, is the one namespace the manager watches.
	WatchNamespace string
	// MinPassInterval, when positive, runs at most one pass per config per interval: a
	// request that comes sooner after the last pass started waits for the rest of it,
	// with whatever else arrives meanwhile (internal/pacing). 0 runs a pass for every
	// request, controller-runtime's default.
	MinPassInterval time.Duration

	// initLocksReleased remembers the clusters (by UID) whose init lock this process has
	// released, so that joining configs do not delete it again on every pass.
	initLocksReleased sync.Map
}

// Reconcile runs one pass for a KThreesConfig.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	log := ctrl.LoggerFrom(ctx)

	config := &bootstrapv1.KThreesConfig{}
	if err := r.Client.Get(ctx, req.NamespacedName, config); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading KThreesConfig: %w", err)
	}
	owner, err := ownerOf(ctx, r.Client, config)
	if err != nil || owner == nil {
		// No owner yet: CAPI sets it, and the Machine watch brings us back then.
		return ctrl.Result{}, err
	}
	log = log.WithValues(owner.kind, owner.name)
	cluster, err := util.GetClusterByName(ctx, r.Client, config.Namespace, owner.clusterName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			log.V(4).Info("Waiting for the Cluster to exist")
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading Cluster: %w", err)
	}
	log = log.WithValues("Cluster", client.ObjectKeyFromObject(cluster))
	ctx = ctrl.LoggerInto(ctx, log)

	// A Machine's config without data is about to be rendered: only from a current copy.
	// current records that the API server confirmed the copy (see writeStatusFromCurrentCopy).
	current := false
	if !owner.pool && !ptr.Deref(config.Status.Initialization.DataSecretCreated, false) {
		if behind, err := r.cacheIsBehind(ctx, config); err != nil || behind {
			if behind {
				log.V(4).Info("The cached KThreesConfig is older than the API server's; waiting for the cache")
			}
			return ctrl.Result{}, err
		}
		current = r.APIReader != nil
	}

	// Before any status write: one condition left by other software makes them all invalid.
	if err := staleconditions.Drop(ctx, r.Client, config, ownedConditions); err != nil {
		return ctrl.Result{}, err
	}
	if annotations.IsPaused(cluster, config) {
		// Paused=True is written at once, and nothing else is done.
		_, _, err := paused.EnsurePausedCondition(ctx, r.Client, cluster, config)
		return ctrl.Result{}, err
	}

	// The whole status goes in one write at the end of the pass, Paused included: each
	// write of a config is one more event for this controller and CAPI's Machine or
	// MachinePool controller.
	pass := statuspatch.New(config)
	// A pass from a current copy that changed only the status writes it unguarded
	// (currentstatus.go).
	write := func() error {
		if current {
			only, err := pass.OnlyStatusChanged(config)
			if err != nil {
				return fmt.Errorf("patching KThreesConfig: %w", err)
			}
			if only {
				return writeStatusFromCurrentCopy(ctx, r.Client, config)
			}
		}
		if _, err := pass.Write(ctx, r.Client, config); err != nil {
			return fmt.Errorf("patching KThreesConfig: %w", err)
		}
		return nil
	}
	setCondition(config, clusterv1.PausedCondition, metav1.ConditionFalse, clusterv1.NotPausedReason, "")
	if !config.DeletionTimestamp.IsZero() {
		// The data Secret is owned by the config and goes with it.
		return ctrl.Result{}, write()
	}
	defer func() {
		setReady(config)
		config.Status.ObservedGeneration = config.Generation
		reterr = errors.Join(reterr, write())
	}()

	return ctrl.Result{}, r.reconcile(ctx, cluster, config, owner)
}

// reconcile makes the data Secret: once for a Machine, and kept up to date for a
// MachinePool (machinepool.go). Each step that is not done yet records why in
// DataSecretAvailable and returns; a watch brings the config back when it changes.
func (r *Reconciler) reconcile(ctx context.Context, cluster *clusterv1.Cluster, config *bootstrapv1.KThreesConfig, owner *configOwner) (reterr error) {
	if owner.pool {
		if refusePoolServer(config, owner) {
			return nil
		}
	} else if ptr.Deref(config.Status.Initialization.DataSecretCreated, false) {
		setCondition(config, bootstrapv1.DataSecretAvailableCondition, metav1.ConditionTrue, bootstrapv1.DataSecretAvailableReason, "")
		return nil
	} else if done, err := r.renderedBefore(ctx, config, owner); err != nil || done {
		return err
	}
	if !ptr.Deref(cluster.Status.Initialization.InfrastructureProvisioned, false) {
		waiting(config, bootstrapv1.WaitingForClusterInfrastructureReason, "Waiting for the Cluster's infrastructure to be provisioned")
		return nil
	}
	if !cluster.Spec.ControlPlaneEndpoint.IsValid() {
		waiting(config, bootstrapv1.WaitingForControlPlaneEndpointReason, "Waiting for the Cluster's control plane endpoint")
		return nil
	}

	// A Secret that could not be labelled for clusterctl move does not stop this pass;
	// the failure is returned with its result (see userSecrets).
	secrets := &userSecrets{Client: r.Client, cluster: cluster.Name}
	defer func() {
		if err := secrets.labelErr(); err != nil {
			reterr = errors.Join(reterr, err)
		}
	}()
	in, ready, err := r.inputs(ctx, cluster, config, owner, secrets)
	if err != nil || !ready {
		return err
	}
	data, err := renderBootstrapData(in)
	if err != nil {
		setCondition(config, bootstrapv1.DataSecretAvailableCondition, metav1.ConditionFalse,
			bootstrapv1.DataSecretGenerationFailedReason, err.Error())
		// Bad input stays bad until the user edits the config, which wakes us.
		return nil
	}
	secretData := dataSecretContent(config, data)
	if fits, err := fitsInSecret(config, secretData, in.Files); !fits {
		return err
	}
	store := createDataSecret
	if owner.pool {
		store = storePoolDataSecret
	}
	if err := store(ctx, r.Client, cluster, config, secretData); err != nil {
		return err
	}
	created := !ptr.Deref(config.Status.Initialization.DataSecretCreated, false)
	config.Status.DataSecretName = config.Name
	config.Status.Initialization.DataSecretCreated = ptr.To(true)
	setCondition(config, bootstrapv1.DataSecretAvailableCondition, metav1.ConditionTrue, bootstrapv1.DataSecretAvailableReason, "")
	if created {
		ctrl.LoggerFrom(ctx).Info("Created bootstrap data Secret", "role", in.Role)
	}
	return nil
}
