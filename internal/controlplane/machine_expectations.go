package controlplane

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// A pass decides how many servers to add or remove from the Machines in the manager's
// cache, and each informer lags on its own. A pass woken by another event (a Secret,
// the Cluster, its own status write) can read a control plane that has caught up and
// a Machine list that has not: a list without the server the previous pass created
// makes it create another, and a list that still shows a server the previous pass
// deleted makes it decide on a server that is leaving (under a changed Cluster it may
// pick a second one to delete). For k3s every server is an etcd member, so either
// mistake costs a membership change, or quorum.
//
// machineExpectations remembers, per control plane, the server Machines this process
// created and deleted until a Machine list shows them so. A pass whose list does not
// yet confirms each of them asks the API server once about that Machine: when the
// live state does not show the write either (someone deleted the new Machine, or it
// no longer belongs to the control plane), the expectation is dropped, so that
// nothing waits for what will never come; otherwise the cache lags and the pass takes
// no step on the servers. The Machine watch brings the pass that sees the write.
//
// ownwrites.go is the same guard for the control plane object. Only this process's
// writes are known, which is all a lag behind one's own writes is; a restarted
// manager starts with a fresh cache and remembers nothing.
type machineExpectations struct {
	mu             sync.Mutex
	byControlPlane map[types.NamespacedName]*serverWrites
}

// serverWrites are the writes to one control plane's servers that no Machine list has
// shown yet.
type serverWrites struct {
	// created are the names of the servers created.
	created map[string]struct{}
	// deleted are the servers deleted, name to UID: a name may come back as another
	// Machine.
	deleted map[string]types.UID
}

func newMachineExpectations() *machineExpectations {
	return &machineExpectations{byControlPlane: map[types.NamespacedName]*serverWrites{}}
}

// writesOf returns the control plane's record, making it; the caller holds mu.
func (e *machineExpectations) writesOf(key types.NamespacedName) *serverWrites {
	w := e.byControlPlane[key]
	if w == nil {
		w = &serverWrites{created: map[string]struct{}{}, deleted: map[string]types.UID{}}
		e.byControlPlane[key] = w
	}
	return w
}

// created records a server Machine this process created. A nil machineExpectations
// records nothing (a Reconciler built without SetupWithManager, in unit tests).
func (e *machineExpectations) created(key types.NamespacedName, name string) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.writesOf(key).created[name] = struct{}{}
}

// deleted records a server Machine this process deleted.
func (e *machineExpectations) deleted(key types.NamespacedName, m *clusterv1.Machine) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.writesOf(key).deleted[m.Name] = m.UID
}

// forget drops a control plane that is gone.
func (e *machineExpectations) forget(key types.NamespacedName) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byControlPlane, key)
}

// unconfirmed drops the writes that machines (a list of the control plane's servers)
// shows, and returns copies of the others.
func (e *machineExpectations) unconfirmed(key types.NamespacedName, machines collections.Machines) (created []string, deleted map[string]types.UID) {
	if e == nil {
		return nil, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	w := e.byControlPlane[key]
	if w == nil {
		return nil, nil
	}
	for name := range w.created {
		if _, ok := machines[name]; ok {
			delete(w.created, name)
		} else {
			created = append(created, name)
		}
	}
	deleted = map[string]types.UID{}
	for name, uid := range w.deleted {
		if m, ok := machines[name]; !ok || m.UID != uid || !m.DeletionTimestamp.IsZero() {
			delete(w.deleted, name)
		} else {
			deleted[name] = uid
		}
	}
	if len(w.created) == 0 && len(w.deleted) == 0 {
		delete(e.byControlPlane, key)
	}
	return created, deleted
}

// drop gives up an expectation the API server contradicts.
func (e *machineExpectations) drop(key types.NamespacedName, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if w := e.byControlPlane[key]; w != nil {
		delete(w.created, name)
		delete(w.deleted, name)
		if len(w.created) == 0 && len(w.deleted) == 0 {
			delete(e.byControlPlane, key)
		}
	}
}

// machinesLag says why machines, the control plane's servers as the cache lists them,
// are older than this process's own creates and deletes of servers ("" when they are
// not). Each write the list does not show is looked up live, and dropped when the API
// server does not show it either; the first the API server does show is the answer.
func (r *Reconciler) machinesLag(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, machines collections.Machines) (string, error) {
	key := client.ObjectKeyFromObject(kcp)
	created, deleted := r.expectations.unconfirmed(key, machines)
	for _, name := range created {
		m, err := r.liveMachine(ctx, kcp.Namespace, name)
		if err != nil {
			return "", err
		}
		if m != nil && isServerOf(m, cluster, kcp) {
			return fmt.Sprintf("the cache does not show Machine %s, created by this controller, yet", name), nil
		}
		r.expectations.drop(key, name)
	}
	for name, uid := range deleted {
		m, err := r.liveMachine(ctx, kcp.Namespace, name)
		if err != nil {
			return "", err
		}
		if m == nil || m.UID != uid || !m.DeletionTimestamp.IsZero() {
			return fmt.Sprintf("the cache still shows Machine %s, deleted by this controller, running", name), nil
		}
		// The same Machine, not being deleted: the deletion this process asked for did
		// not happen to it, and no event will say otherwise.
		r.expectations.drop(key, name)
	}
	return "", nil
}

// liveMachine reads a Machine from the API server; nil when there is none.
func (r *Reconciler) liveMachine(ctx context.Context, namespace, name string) (*clusterv1.Machine, error) {
	m := &clusterv1.Machine{}
	if err := r.liveReader().Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, m); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading Machine %s: %w", name, err)
	}
	return m, nil
}

// isServerOf says the Machine is one that controlPlaneMachines lists for kcp: a
// created Machine that someone has since relabelled or orphaned never will be.
func isServerOf(m *clusterv1.Machine, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane) bool {
	_, server := m.Labels[clusterv1.MachineControlPlaneLabel]
	return server && m.Labels[clusterv1.ClusterNameLabel] == cluster.Name && collections.OwnedMachines(kcp, kcpGroupKind)(m)
}

// machineCacheRecheck is when a pass that waited for the Machine cache runs again,
// should no Machine event come first (the one it waits for normally does).
const machineCacheRecheck = time.Second

// waitForMachineCache ends a pass early, with a short requeue, when its list of
// servers is older than this process's own creates and deletes of servers. The
// deferred status write then leaves what the servers decide (counters, machine and
// etcd conditions) as the last pass wrote it.
func (r *Reconciler) waitForMachineCache(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane,
	machines collections.Machines, seen *observed) (ctrl.Result, error) {
	lag, err := r.machinesLag(ctx, cluster, kcp, machines)
	if err != nil || lag == "" {
		return ctrl.Result{}, err
	}
	seen.machineCacheBehind = true
	ctrl.LoggerFrom(ctx).V(4).Info("Taking no step on the servers until the cache catches up with this controller's own writes", "why", lag)
	return ctrl.Result{RequeueAfter: machineCacheRecheck}, nil
}
