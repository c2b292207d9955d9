package controlplane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/collections"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// A server is three objects created one after another (scale.go, restore_server.go):
// its infrastructure machine, its KThreesConfig, its Machine. A failed create deletes
// the earlier ones, but a manager that dies between two creates cannot: it leaves an
// infrastructure machine, perhaps a KThreesConfig too, owned by the control plane and
// by no Machine, until the control plane is deleted. Every leftover starts with an
// infrastructure machine, so one metadata list of those finds them all.
//
// The process that takes over sweeps them: the first pass of each control plane in a
// process lists the infrastructure machines labelled as its servers, and deletes the
// KThreesConfig and then the infrastructure machine of each that no Machine owns or
// names and no live Machine of its name exists for, once it is leftoverGrace old. The
// age is what keeps a sweep off a server another process is creating at that moment
// (a leader that has not yet seen it lost its lease, or the restore controller); a
// create takes milliseconds, a lease handover seconds. A younger candidate brings the
// pass back when it is old enough. A pass of this process whose server create failed
// asks for a sweep again, since its own clean-up may have failed too.
//
// The age is measured on this process's clock alone: from when this process first
// listed the candidate, not from its creationTimestamp. That timestamp is the API
// server's clock; comparing it with the manager's would make a manager whose clock runs
// more than leftoverGrace ahead of the API server's see a server created a moment ago
// as old, and delete it between its creates. Two readings of one clock cannot be
// skewed: a candidate first listed now is judged again leftoverGrace later by the same
// clock, so a create in flight has had at least leftoverGrace to finish, whatever the
// clocks say. The cost is that a new process waits leftoverGrace before deleting even
// a leftover that is days old; leftovers are rare and harm nothing while they wait.
//
// The sweep costs one list per control plane per process, not one per pass: leftovers
// only come from processes that died or creates that failed.

// leftoverGrace is how old an unowned infrastructure machine must be to be a leftover.
const leftoverGrace = 30 * time.Second

// leftoverSweeps remembers the control planes this process has swept, and when it
// first listed each candidate of those not yet swept.
type leftoverSweeps struct {
	mu    sync.Mutex
	swept map[types.NamespacedName]struct{}
	// firstSeen is, per control plane, when this process first listed each candidate
	// (by UID), on its own clock.
	firstSeen map[types.NamespacedName]map[types.UID]time.Time
	// grace is leftoverGrace; tests shorten it.
	grace time.Duration
	// now is this process's clock; tests move it.
	now func() time.Time
}

func newLeftoverSweeps() *leftoverSweeps {
	return &leftoverSweeps{
		swept:     map[types.NamespacedName]struct{}{},
		firstSeen: map[types.NamespacedName]map[types.UID]time.Time{},
		grace:     leftoverGrace,
		now:       time.Now,
	}
}

// due says whether the control plane is to be swept. A nil leftoverSweeps (a
// Reconciler built without SetupWithManager) never sweeps: with no memory it could
// not age a candidate on its own clock.
func (s *leftoverSweeps) due(key types.NamespacedName) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, done := s.swept[key]
	return !done
}

func (s *leftoverSweeps) done(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.swept[key] = struct{}{}
	delete(s.firstSeen, key)
}

// again asks for another sweep (a server create of this process failed), and forget
// drops a control plane that is gone: both leave it unswept.
func (s *leftoverSweeps) again(key types.NamespacedName) { s.forget(key) }
func (s *leftoverSweeps) forget(key types.NamespacedName) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.swept, key)
	delete(s.firstSeen, key)
}

// ages returns, for each candidate UID, how long ago this process first listed it
// (0 for one listed now), and forgets candidates no longer listed.
func (s *leftoverSweeps) ages(key types.NamespacedName, candidates []types.UID) map[types.UID]time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	before := s.firstSeen[key]
	seen := make(map[types.UID]time.Time, len(candidates))
	ages := make(map[types.UID]time.Duration, len(candidates))
	for _, uid := range candidates {
		first, ok := before[uid]
		if !ok {
			first = now
		}
		seen[uid], ages[uid] = first, now.Sub(first)
	}
	s.firstSeen[key] = seen
	return ages
}

// sweepLeftovers deletes the control plane's leftover server objects when a sweep is
// due, and returns when the pass should run again for candidates too young to judge
// (0 when none). It never fails the pass: an error is logged and the sweep is tried
// again after leftoverGrace.
func (r *Reconciler) sweepLeftovers(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, machines collections.Machines) time.Duration {
	key := client.ObjectKeyFromObject(kcp)
	if !r.leftovers.due(key) {
		return 0
	}
	wait, err := r.sweep(ctx, cluster, kcp, machines)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Looking for server objects left by an interrupted server create; trying again later")
		return r.leftovers.grace
	}
	if wait == 0 {
		r.leftovers.done(key)
	}
	return wait
}

func (r *Reconciler) sweep(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, machines collections.Machines) (time.Duration, error) {
	gvk, err := r.infraMachineKind(kcp)
	if err != nil {
		return 0, err
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := r.liveReader().List(ctx, list, client.InNamespace(kcp.Namespace), client.MatchingLabels{
		clusterv1.ClusterNameLabel: cluster.Name, clusterv1.MachineControlPlaneNameLabel: kcp.Name,
	}); err != nil {
		return 0, fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	named := map[string]bool{}
	for _, m := range machines {
		named[m.Name], named[m.Spec.InfrastructureRef.Name] = true, true
	}
	var candidates []*metav1.PartialObjectMetadata
	var uids []types.UID
	for i := range list.Items {
		if infra := &list.Items[i]; leftoverCandidate(infra, kcp, named) {
			candidates, uids = append(candidates, infra), append(uids, infra.UID)
		}
	}
	ages := r.leftovers.ages(client.ObjectKeyFromObject(kcp), uids)
	var wait time.Duration
	var errs []error
	for _, infra := range candidates {
		if left := r.leftovers.grace - ages[infra.UID]; left > 0 {
			if wait == 0 || left < wait {
				wait = left
			}
			continue
		}
		machine, err := r.liveMachine(ctx, kcp.Namespace, infra.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if machine != nil {
			continue
		}
		errs = append(errs, r.deleteLeftover(ctx, kcp, gvk.Kind, infra))
	}
	return wait, errors.Join(errs...)
}

// leftoverCandidate says the infrastructure machine is the control plane's (its
// controller) and belongs to no Machine: none owns it, none the pass lists names it.
func leftoverCandidate(infra metav1.Object, kcp *controlplanev1.KThreesControlPlane, named map[string]bool) bool {
	if !infra.GetDeletionTimestamp().IsZero() || named[infra.GetName()] {
		return false
	}
	owner := metav1.GetControllerOfNoCopy(infra)
	return owner != nil && owner.UID == kcp.UID &&
		!util.HasOwner(infra.GetOwnerReferences(), clusterv1.GroupVersion.String(), []string{"Machine"})
}

// deleteLeftover deletes a leftover server's KThreesConfig, if it has one that is as
// much a leftover, and then its infrastructure machine: a sweep cut short between the
// two finds the infrastructure machine again. Both deletes are bound to the UIDs read.
func (r *Reconciler) deleteLeftover(ctx context.Context, kcp *controlplanev1.KThreesControlPlane, kind string, infra *metav1.PartialObjectMetadata) error {
	config := &bootstrapv1.KThreesConfig{}
	err := r.liveReader().Get(ctx, client.ObjectKey{Namespace: infra.Namespace, Name: infra.Name}, config)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("reading KThreesConfig %s: %w", infra.Name, err)
	}
	if err == nil && leftoverCandidate(config, kcp, nil) {
		if err := r.Client.Delete(ctx, config, client.Preconditions{UID: &config.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting leftover KThreesConfig %s: %w", config.Name, err)
		}
	}
	if err := r.Client.Delete(ctx, infra, client.Preconditions{UID: &infra.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting leftover %s %s: %w", kind, infra.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Deleted the objects of a server whose create was interrupted", kind, infra.Name,
		"createdAt", infra.CreationTimestamp.UTC().Format(time.RFC3339))
	return nil
}

// infraMachineKind is the kind of the servers' infrastructure machines: the template's
// kind without "Template", as CAPI's external.GenerateTemplate names the clones, at the
// version the API server prefers.
func (r *Reconciler) infraMachineKind(kcp *controlplanev1.KThreesControlPlane) (schema.GroupVersionKind, error) {
	ref := kcp.Spec.MachineTemplate.Spec.InfrastructureRef
	gk := schema.GroupKind{Group: ref.APIGroup, Kind: strings.TrimSuffix(ref.Kind, clusterv1.TemplateSuffix)}
	mapping, err := r.Client.RESTMapper().RESTMapping(gk)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("finding the version of %s: %w", gk, err)
	}
	return mapping.GroupVersionKind, nil
}
