package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	kubeadmcontrolplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// A fleet upgrade bumps every cluster's version at once, as a platform team does
// every month, the way a user (or CAPI's topology controller) upgrades one cluster:
// the control plane first, and the MachineDeployment once every server runs the new
// version. A cluster is upgraded when each of its Machines, as many as the shape
// asks for and none being deleted, runs the new version, is Ready and UpToDate, and
// the Cluster is Available. The same definition holds for both providers; each
// provider replaces its servers with its default rolling update (one surge server).
type fleetUpgrade struct {
	// c writes the version bumps, on a connection that is not counted and not rate
	// limited, so that "at once" means at once for a hundred clusters.
	c         client.Client
	ready     *readiness
	p         provider
	namespace string
	shape     shape
	to        string
}

// upgradeWaits are the per-cluster states of a fleet upgrade.
type upgradeWaits struct {
	bumped   map[string]time.Time // the control plane's version was bumped
	agentsAt map[string]bool      // the MachineDeployment's version was bumped
	took     map[string]time.Duration
}

func newFleetUpgrade(cfg *rest.Config, c client.Client, ready *readiness, p provider, namespace string, s shape) (*fleetUpgrade, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit
	uc, err := client.New(cfg, client.Options{Scheme: c.Scheme()})
	if err != nil {
		return nil, err
	}
	return &fleetUpgrade{c: uc, ready: ready, p: p, namespace: namespace, shape: s, to: upgradeVersion(p)}, nil
}

// run bumps every cluster of names and waits until all are upgraded or ctx ends.
// It returns, per cluster, the time from its control plane's bump to its last
// Machine up to date, and the moment of the first bump.
func (u *fleetUpgrade) run(ctx context.Context, names []string, progress func(done, total int)) (map[string]time.Duration, time.Time, error) {
	w := upgradeWaits{bumped: map[string]time.Time{}, agentsAt: map[string]bool{}, took: map[string]time.Duration{}}
	start := time.Now()
	if err := u.bumpControlPlanes(ctx, names, w.bumped); err != nil {
		return nil, start, err
	}
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	lastReport := time.Now()
	for len(w.took) < len(names) {
		select {
		case <-ctx.Done():
			return w.took, start, fmt.Errorf("%d of %d clusters upgraded when the wait ended: %w", len(w.took), len(names), ctx.Err())
		case <-t.C:
		}
		if err := u.step(ctx, &w); err != nil {
			return w.took, start, err
		}
		if now := time.Now(); progress != nil && now.Sub(lastReport) > 10*time.Second {
			progress(len(w.took), len(names))
			lastReport = now
		}
	}
	return w.took, start, nil
}

// step bumps the MachineDeployment of each cluster whose servers are all upgraded,
// and records the clusters that are upgraded whole.
func (u *fleetUpgrade) step(ctx context.Context, w *upgradeWaits) error {
	states, err := u.states(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	var agentsDue []string
	for name, at := range w.bumped {
		if _, done := w.took[name]; done {
			continue
		}
		st := states[name]
		if u.shape.Agents > 0 && !w.agentsAt[name] {
			if st.serversDone(u.shape) {
				agentsDue = append(agentsDue, name)
			}
			continue
		}
		if st.done(u.shape) {
			w.took[name] = now.Sub(at)
		}
	}
	// The MachineDeployments due are bumped together, as the control planes were: one
	// after the other, a hundred patches on a busy apiserver held the last cluster's
	// agents back by a minute, and the progress of every other cluster with them.
	patched, err := u.patchAll(ctx, clusterv1.GroupVersion.WithKind("MachineDeployment"), agentsDue,
		func(cluster string) string { return cluster + "-agents" },
		fmt.Sprintf(`{"spec":{"template":{"spec":{"version":%q}}}}`, u.to))
	for name := range patched {
		w.agentsAt[name] = true
	}
	return err
}

// clusterUpgradeState counts one cluster's Machines that are done (at the new version,
// Ready, UpToDate, not being deleted) and those that are not.
type clusterUpgradeState struct {
	serversAt, agentsAt       int
	staleServers, staleAgents int
	available                 bool
}

func (u *fleetUpgrade) states(ctx context.Context) (map[string]*clusterUpgradeState, error) {
	clusters := &clusterv1.ClusterList{}
	if err := u.ready.cache.List(ctx, clusters); err != nil {
		return nil, err
	}
	machines := &clusterv1.MachineList{}
	if err := u.ready.cache.List(ctx, machines); err != nil {
		return nil, err
	}
	return upgradeStates(clusters.Items, machines.Items, u.to), nil
}

// upgradeStates counts, per cluster, the Machines that are upgraded to version and
// those that are not.
func upgradeStates(clusters []clusterv1.Cluster, machines []clusterv1.Machine, version string) map[string]*clusterUpgradeState {
	out := map[string]*clusterUpgradeState{}
	for i := range clusters {
		c := &clusters[i]
		out[c.Name] = &clusterUpgradeState{available: conditions.IsTrue(c, clusterv1.AvailableCondition)}
	}
	for i := range machines {
		m := &machines[i]
		st := out[m.Spec.ClusterName]
		if st == nil {
			continue
		}
		done := m.DeletionTimestamp == nil && m.Spec.Version == version &&
			conditions.IsTrue(m, clusterv1.ReadyCondition) && conditions.IsTrue(m, clusterv1.MachineUpToDateCondition)
		_, server := m.Labels[clusterv1.MachineControlPlaneLabel]
		switch {
		case !done && server:
			st.staleServers++
		case !done:
			st.staleAgents++
		case server:
			st.serversAt++
		default:
			st.agentsAt++
		}
	}
	return out
}

// serversDone says every server of the shape is upgraded and no other is left.
func (st *clusterUpgradeState) serversDone(s shape) bool {
	return st != nil && st.serversAt == int(s.Servers) && st.staleServers == 0
}

// done says the whole cluster is upgraded: every Machine of the shape, no other, and
// the Cluster Available.
func (st *clusterUpgradeState) done(s shape) bool {
	return st.serversDone(s) && st.available && st.agentsAt == int(s.Agents) && st.staleAgents == 0
}

// bumpControlPlanes sets every cluster's control plane version, and records when each
// was bumped.
func (u *fleetUpgrade) bumpControlPlanes(ctx context.Context, names []string, bumped map[string]time.Time) error {
	gvk := controlplanev1.GroupVersion.WithKind("KThreesControlPlane")
	if u.p == providerKCP {
		gvk = kubeadmcontrolplanev1.GroupVersion.WithKind("KubeadmControlPlane")
	}
	patched, err := u.patchAll(ctx, gvk, names, func(cluster string) string { return cluster },
		fmt.Sprintf(`{"spec":{"version":%q}}`, u.to))
	maps.Copy(bumped, patched)
	return err
}

// patchAll merge-patches the object objectOf(cluster) of kind gvk for every cluster
// of names, creators at a time, and returns when each patch was accepted.
func (u *fleetUpgrade) patchAll(ctx context.Context, gvk schema.GroupVersionKind, names []string,
	objectOf func(cluster string) string, patch string) (map[string]time.Time, error) {
	var (
		mu      sync.Mutex
		errs    []error
		patched = map[string]time.Time{}
		wg      sync.WaitGroup
		next    = make(chan string)
	)
	for range creators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range next {
				err := u.patch(ctx, gvk, objectOf(name), patch)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					patched[name] = time.Now()
				}
				mu.Unlock()
			}
		}()
	}
	for _, name := range names {
		next <- name
	}
	close(next)
	wg.Wait()
	return patched, errors.Join(errs...)
}

func (u *fleetUpgrade) patch(ctx context.Context, gvk schema.GroupVersionKind, name, patch string) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(u.namespace)
	obj.SetName(name)
	if err := u.c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("upgrading %s %s: %w", gvk.Kind, name, err)
	}
	return nil
}
