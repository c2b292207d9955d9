package controlplane

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/inplaceplan"
)

// inPlaceStep is what tryInPlaceUpdate did with the server a scale-down chose.
type inPlaceStep struct {
	// taken says the in-place update is the pass's step: triggered, or waiting until
	// it can be decided. The server must not be removed.
	taken bool
	// notInPlace says why the server is replaced instead ("" when in-place updates
	// are not in play).
	notInPlace string
	// requeueAfter asks for the next pass: the cache lags behind objects no watch of
	// this controller reports.
	requeueAfter time.Duration
}

// cacheLagRequeue is how soon a pass that waits for the cache comes back: the
// KThreesConfigs and infrastructure machines it waits for are not watched here.
const cacheLagRequeue = time.Second

// tryInPlaceUpdate is the rollout's alternative to removing victim, the server the
// scale-down chose: update it in place when allowed, when it is outdated (not merely
// marked for deletion), when the control plane does not already have enough up-to-date
// servers, when no other server is being updated in place, and when the extensions
// cover every change. Only an answer that leaves changes uncovered (or none to ask)
// replaces the server; a question that fails is an error, and the pass is retried.
// The caller has run the preflight checks already.
func (r *Reconciler) tryInPlaceUpdate(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane,
	seen *observed, victim *clusterv1.Machine, outdated collections.Machines) (inPlaceStep, error) {
	if !r.inPlaceAllowed(kcp) || victim == nil || len(seen.updatingInPlace) > 0 {
		// Another server's update that CAPI has not started (inplace_hold.go) stays
		// the only one: this scale-down removes its server as without the feature.
		return inPlaceStep{}, nil
	}
	if _, isOutdated := outdated[victim.Name]; !isOutdated {
		return inPlaceStep{}, nil
	}
	if _, marked := victim.Annotations[clusterv1.DeleteMachineAnnotation]; marked {
		return inPlaceStep{}, nil
	}
	upToDate := seen.machines.Filter(collections.Not(collections.HasDeletionTimestamp), func(m *clusterv1.Machine) bool {
		_, isOutdated := outdated[m.Name]
		return !isOutdated
	})
	if int32(upToDate.Len()) >= desiredReplicas(kcp) {
		// Enough servers are up to date: the outdated one is surplus, and goes.
		return inPlaceStep{}, nil
	}
	if !r.RuntimeClient.IsReady() {
		// Right after the manager starts, until the ExtensionConfigs are loaded: asking
		// now would find no extension and replace a server that could be updated.
		return inPlaceStep{taken: true}, errors.New("the Runtime SDK client has not loaded the ExtensionConfigs yet; the rollout waits for it")
	}
	objs := seen.objects[victim.Name]
	if objs.config == nil || objs.infra == nil {
		// Adopted from other software (another bootstrap provider) or half gone.
		return inPlaceStep{notInPlace: "server " + victim.Name + " has no KThreesConfig or infrastructure machine to update in place"}, nil
	}
	if behind, err := r.cacheBehind(ctx, victim, objs); err != nil {
		return inPlaceStep{taken: true}, err
	} else if behind {
		return inPlaceStep{taken: true, requeueAfter: cacheLagRequeue}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("Machine", victim.Name)
	want, why, err := r.desiredServerObjects(ctx, cluster, kcp, victim, objs)
	if err != nil {
		return inPlaceStep{taken: true}, err
	}
	if why == "" {
		// The extensions compare the current infrastructure machine as the API
		// server normalizes it now with the desired one normalized alike; the
		// trigger's writes start from the stored one.
		why, err = r.canUpdateInPlace(ctx, victim, serverObjects{config: objs.config, infra: want.currentInfra}, want)
	}
	if err != nil {
		// No answer is no "cannot": a timeout must not delete a server.
		seen.blocked = "asking the update extensions whether server " + victim.Name + " can be updated in place failed (retrying): " + err.Error()
		return inPlaceStep{taken: true}, fmt.Errorf("asking whether server %s can be updated in place: %w", victim.Name, err)
	}
	if why != "" {
		log.Info("The server cannot be updated in place; it is replaced", "reason", why)
		return inPlaceStep{notInPlace: "server " + victim.Name + " is replaced, not updated in place: " + why}, nil
	}
	log.Info("Updating a server in place", "version", want.machine.Spec.Version)
	seen.updatingInPlace = []string{victim.Name}
	return inPlaceStep{taken: true}, r.triggerInPlaceUpdate(ctx, victim, want, objs)
}

// cacheBehind says the cache does not show the servers as the API server has them
// now, in one of two ways that could make a lagging cache start a second update:
// another server is being updated in place (a mark the cache has not shown yet), or
// this server's Machine, KThreesConfig or infrastructure machine has changed since it
// was read (a server whose update has just ended would look outdated and unmarked,
// and be updated again). The pass then waits for the cache, and comes back soon:
// only Machines are watched here. The Machine's own UpToDate condition, written earlier in the
// pass, is such a change: the first pass after a spec change only marks servers
// outdated. These reads go past the cache, and happen only when a server is about to
// be updated in place.
func (r *Reconciler) cacheBehind(ctx context.Context, m *clusterv1.Machine, objs serverObjects) (bool, error) {
	reader := r.liveReader()
	servers := &clusterv1.MachineList{}
	if err := reader.List(ctx, servers, client.InNamespace(m.Namespace),
		client.MatchingLabels{clusterv1.ClusterNameLabel: m.Spec.ClusterName}, client.HasLabels{clusterv1.MachineControlPlaneLabel}); err != nil {
		return false, fmt.Errorf("listing control plane Machines: %w", err)
	}
	for i := range servers.Items {
		if s := &servers.Items[i]; s.DeletionTimestamp.IsZero() && updatingInPlace(s) {
			return true, nil
		}
	}
	cached := []client.Object{m}
	live := []client.Object{&clusterv1.Machine{}}
	if objs.config != nil {
		cached, live = append(cached, objs.config), append(live, &bootstrapv1.KThreesConfig{})
	}
	if objs.infra != nil {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(objs.infra.GroupVersionKind())
		cached, live = append(cached, objs.infra), append(live, u)
	}
	for i, obj := range cached {
		if err := reader.Get(ctx, client.ObjectKeyFromObject(obj), live[i]); err != nil {
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, fmt.Errorf("reading %s: %w", obj.GetName(), err)
		}
		if live[i].GetResourceVersion() != obj.GetResourceVersion() {
			return true, nil
		}
	}
	return false, nil
}

// triggerInPlaceUpdate starts a server's in-place update. The order makes a crash
// between any two writes safe:
//
//  1. the Machine gets the update-in-progress annotation: from here on the update
//     happens; no pass asks the extensions again or replaces the server, and a pass
//     that finds the annotation without the pending hook completes the trigger;
//  2. the infrastructure machine gets its desired spec and the annotation;
//  3. the KThreesConfig gets its desired spec and the annotation;
//  4. the Machine gets its desired spec and the pending UpdateMachine hook in one
//     write: CAPI's Machine controller starts on the hook, and by then the other two
//     objects are ready for it.
//
// Steps 2 to 4 write only what differs, so repeating them changes nothing. Writes to
// the Machine carry its resourceVersion: one computed from a stale copy fails and the
// pass waits for the cache.
func (r *Reconciler) triggerInPlaceUpdate(ctx context.Context, m *clusterv1.Machine, want inPlaceObjects, objs serverObjects) error {
	if _, marked := m.Annotations[clusterv1.UpdateInProgressAnnotation]; !marked {
		before := m.DeepCopy()
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[clusterv1.UpdateInProgressAnnotation] = ""
		if err := r.Client.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return ignoreConflict(fmt.Errorf("marking Machine %s for an in-place update: %w", m.Name, err))
		}
	}
	return r.completeInPlaceTrigger(ctx, m, want, objs)
}

// completeInPlaceTrigger runs steps 2 to 4 of triggerInPlaceUpdate, on the Machine as
// the API server has it: this pass may have written its conditions already, and a
// cache that lags must not make it mark a Machine whose update has gone further.
func (r *Reconciler) completeInPlaceTrigger(ctx context.Context, m *clusterv1.Machine, want inPlaceObjects, objs serverObjects) error {
	live := &clusterv1.Machine{}
	if err := r.liveReader().Get(ctx, client.ObjectKeyFromObject(m), live); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("reading Machine %s: %w", m.Name, err))
	}
	if !triggerIncomplete(live) {
		return nil
	}
	m = live
	infra := objs.infra.DeepCopy()
	infra.Object["spec"] = want.infra.Object["spec"]
	infra.SetAnnotations(withUpdateInProgress(want.infra.GetAnnotations()))
	if err := r.patchIfChanged(ctx, objs.infra, infra); err != nil {
		return err
	}
	config := objs.config.DeepCopy()
	config.Spec = *want.config.Spec.DeepCopy()
	config.SetAnnotations(withUpdateInProgress(config.GetAnnotations()))
	if err := r.patchIfChanged(ctx, objs.config, config); err != nil {
		return err
	}
	spec, err := inplaceplan.MachineSpec(m.Spec, want.machine.Spec)
	if err != nil {
		return err
	}
	before := m.DeepCopy()
	m.Spec = spec
	markUpdateHookPending(m)
	if err := r.Client.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return ignoreConflict(fmt.Errorf("starting the in-place update of Machine %s: %w", m.Name, err))
	}
	ctrl.LoggerFrom(ctx).Info("Triggered the in-place update of a server", "Machine", m.Name, "version", m.Spec.Version)
	return nil
}

func withUpdateInProgress(annotations map[string]string) map[string]string {
	out := maps.Clone(annotations)
	if out == nil {
		out = map[string]string{}
	}
	out[clusterv1.UpdateInProgressAnnotation] = ""
	return out
}

// ignoreConflict drops a conflict: the Machine changed since the cache showed it, and
// its watch event brings a pass that sees it as it is.
func ignoreConflict(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// liveReader reads past the cache: the API reader, or the client when the Reconciler
// was built without one (tests that call its steps directly).
func (r *Reconciler) liveReader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}
