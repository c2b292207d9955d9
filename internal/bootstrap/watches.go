package bootstrap

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/predicates"
	"sigs.k8s.io/cluster-api/util/secret"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/pacing"
	"github.com/capk3s/capk3s/internal/secretcache"
	"github.com/capk3s/capk3s/internal/token"
)

// SetupWithManager registers the controller and the watches that wake a waiting
// config: its Machine or MachinePool (owner set, version), its Cluster (infrastructure
// ready, endpoint, control plane initialized) and the cluster Secrets it waits for
// (the join token, the CAs, and the Secrets a server's datastore names), so no pass
// polls.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	log := ctrl.LoggerFrom(ctx)
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Secrets == nil {
		secrets, err := secretcache.New(ctx, mgr, r.WatchNamespace, cachedSecretPurposes())
		if err != nil {
			return err
		}
		r.Secrets = secrets
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &bootstrapv1.KThreesConfig{}, datastoreSecretIndex, datastoreSecretNames); err != nil {
		return fmt.Errorf("indexing KThreesConfigs by datastore Secret: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &bootstrapv1.KThreesConfig{}, passwdSecretIndex, passwdSecretNames); err != nil {
		return fmt.Errorf("indexing KThreesConfigs by user password Secret: %w", err)
	}
	// The shard's filter (--watch-filter) on every watch but the Secrets': a Secret a
	// config waits for (capk3s's token and CAs, the user's datastore or password
	// Secret) need not carry the label, so secretToConfigs keeps the shard's configs.
	shard := predicates.ResourceHasFilterLabel(mgr.GetScheme(), log, r.WatchFilterValue)
	reconciler, options := pacing.Wrap(r, r.MinPassInterval, options)
	b := ctrl.NewControllerManagedBy(mgr)
	if r.watchesControlPlanes(mgr) {
		cp := &unstructured.Unstructured{}
		cp.SetGroupVersionKind(controlPlaneGVK)
		b = b.Watches(cp, handler.EnqueueRequestsFromMapFunc(r.controlPlaneToConfigs),
			builder.WithPredicates(shard, registrationChanged()))
	} else {
		log.Info("KThreesControlPlane is not served: configs join through the control-plane endpoint only")
	}
	if r.watchesEtcdRestores(mgr) {
		// A restore's first server waits until the restore records it (restore.go).
		restore := &unstructured.Unstructured{}
		restore.SetGroupVersionKind(etcdRestoreGVK)
		b = b.Watches(restore, handler.EnqueueRequestsFromMapFunc(r.restoreToConfigs), builder.WithPredicates(restoreProgressed()))
	}
	return b.
		For(&bootstrapv1.KThreesConfig{}, builder.WithPredicates(shard)).
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(machineToConfig), builder.WithPredicates(shard)).
		Watches(&clusterv1.MachinePool{}, handler.EnqueueRequestsFromMapFunc(machinePoolToConfig), builder.WithPredicates(shard)).
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.clusterToConfigs),
			builder.WithPredicates(shard, predicates.Any(mgr.GetScheme(), log,
				predicates.ClusterPausedTransitionsOrInfrastructureProvisioned(mgr.GetScheme(), log),
				clusterControlPlaneInitialized(),
			))).
		// Metadata only: the name and label are all the mapping needs, and Secret data
		// is never cached cluster-wide.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.secretToConfigs), builder.OnlyMetadata).
		WithOptions(options).
		Complete(reconciler)
}

// clusterControlPlaneInitialized passes Cluster updates that initialize the control
// plane, by the contract's field status.initialization.controlPlaneInitialized: the
// field that role() reads. CAPI's predicate of that name looks at the
// ControlPlaneInitialized condition instead, which CAPI may set in an earlier update
// than the field: a config woken by the condition would read the field still false
// and wait, and the field's own update would then wake no one.
func clusterControlPlaneInitialized() predicate.Funcs {
	initialized := func(o client.Object) bool {
		c, ok := o.(*clusterv1.Cluster)
		return ok && ptr.Deref(c.Status.Initialization.ControlPlaneInitialized, false)
	}
	return predicate.Funcs{
		UpdateFunc:  func(e event.UpdateEvent) bool { return !initialized(e.ObjectOld) && initialized(e.ObjectNew) },
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

func isOurConfig(ref clusterv1.ContractVersionedObjectReference) bool {
	return ref.APIGroup == bootstrapv1.GroupVersion.Group && ref.Kind == "KThreesConfig" && ref.Name != ""
}

func machineToConfig(_ context.Context, o client.Object) []reconcile.Request {
	m, ok := o.(*clusterv1.Machine)
	if !ok || !isOurConfig(m.Spec.Bootstrap.ConfigRef) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.Bootstrap.ConfigRef.Name}}}
}

func machinePoolToConfig(_ context.Context, o client.Object) []reconcile.Request {
	mp, ok := o.(*clusterv1.MachinePool)
	if !ok || !isOurConfig(mp.Spec.Template.Spec.Bootstrap.ConfigRef) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: mp.Namespace, Name: mp.Spec.Template.Spec.Bootstrap.ConfigRef.Name}}}
}

// clusterToConfigs wakes the configs of a cluster that still wait for their data.
func (r *Reconciler) clusterToConfigs(ctx context.Context, o client.Object) []reconcile.Request {
	return r.waitingConfigs(ctx, o.GetNamespace(), o.GetName())
}

// secretToConfigs maps a Secret to the waiting configs that need it: as a token or
// CA Secret of their cluster, or as a Secret their datastore or users' passwdFrom
// references.
func (r *Reconciler) secretToConfigs(ctx context.Context, o client.Object) []reconcile.Request {
	reqs := append(r.clusterSecretToConfigs(ctx, o), r.configsNaming(ctx, o, datastoreSecretIndex)...)
	return r.inShard(ctx, append(reqs, r.configsNaming(ctx, o, passwdSecretIndex)...))
}

// configsNaming maps a Secret to the waiting configs that name it, by one of the
// field indexes of Secret names (datastore, users' passwords). Such Secrets are the
// user's and need not carry the cluster label.
func (r *Reconciler) configsNaming(ctx context.Context, o client.Object, index string) []reconcile.Request {
	configs := &bootstrapv1.KThreesConfigList{}
	if err := r.Client.List(ctx, configs, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{index: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing KThreesConfigs to wake", "Secret", client.ObjectKeyFromObject(o), "index", index)
		return nil
	}
	return withoutData(configs)
}

// clusterSecretToConfigs maps the token and CA Secrets of a cluster to its configs.
func (r *Reconciler) clusterSecretToConfigs(ctx context.Context, o client.Object) []reconcile.Request {
	clusterName := o.GetLabels()[clusterv1.ClusterNameLabel]
	if clusterName == "" {
		// CA Secrets made by util/secret carry the label; so does the token Secret.
		return nil
	}
	switch o.GetName() {
	case token.SecretName(clusterName),
		secret.Name(clusterName, secret.ClusterCA),
		secret.Name(clusterName, k3s.ClientCA),
		secret.Name(clusterName, secret.EtcdCA):
		return r.waitingConfigs(ctx, o.GetNamespace(), clusterName)
	}
	return nil
}

// waitingConfigs lists the cluster's configs without bootstrap data yet, and its
// MachinePools' configs: the others have nothing left to do, which keeps a big
// cluster's events cheap.
func (r *Reconciler) waitingConfigs(ctx context.Context, namespace, clusterName string) []reconcile.Request {
	configs := &bootstrapv1.KThreesConfigList{}
	if err := r.Client.List(ctx, configs, client.InNamespace(namespace),
		client.MatchingLabels{clusterv1.ClusterNameLabel: clusterName}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing KThreesConfigs to wake", "Cluster", clusterName)
		return nil
	}
	return withoutData(configs)
}

// withoutData are the requests of the listed configs that have no bootstrap data yet,
// and of MachinePools' configs, whose data follows the cluster's Secrets.
func withoutData(configs *bootstrapv1.KThreesConfigList) []reconcile.Request {
	var out []reconcile.Request
	for i := range configs.Items {
		c := &configs.Items[i]
		if ptr.Deref(c.Status.Initialization.DataSecretCreated, false) && !ownedByMachinePool(c) {
			continue
		}
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
	}
	return out
}
