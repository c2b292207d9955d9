package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readiness watches Clusters and Machines through an informer cache of its own, on a
// connection that is not counted, and tells when each cluster became ready: the
// Cluster Available, as many control-plane Machines and agent Machines Ready as the
// shape asks for, and the Cluster's status reporting them ready and available (see
// clusterReady). The same definition holds for both providers.
type readiness struct {
	cache   cache.Cache
	servers int
	agents  int
}

func startReadiness(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, namespace string, s shape) (*readiness, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{namespace: {}}})
	if err != nil {
		return nil, err
	}
	// Informers for both kinds before the cache starts, so that the first list sees them.
	for _, obj := range []client.Object{&clusterv1.Cluster{}, &clusterv1.Machine{}} {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			return nil, err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("readiness cache did not sync")
	}
	return &readiness{cache: c, servers: int(s.Servers), agents: int(s.Agents)}, nil
}

// readyClusters is the set of clusters ready now.
func (r *readiness) readyClusters(ctx context.Context) (map[string]bool, error) {
	clusters := &clusterv1.ClusterList{}
	if err := r.cache.List(ctx, clusters); err != nil {
		return nil, err
	}
	machines := &clusterv1.MachineList{}
	if err := r.cache.List(ctx, machines); err != nil {
		return nil, err
	}
	readyServers, readyAgents := map[string]int{}, map[string]int{}
	for i := range machines.Items {
		m := &machines.Items[i]
		if !conditions.IsTrue(m, clusterv1.ReadyCondition) {
			continue
		}
		if _, server := m.Labels[clusterv1.MachineControlPlaneLabel]; server {
			readyServers[m.Spec.ClusterName]++
		} else {
			readyAgents[m.Spec.ClusterName]++
		}
	}
	out := map[string]bool{}
	for i := range clusters.Items {
		c := &clusters.Items[i]
		if clusterReady(c, readyServers[c.Name], readyAgents[c.Name], r.servers, r.agents) {
			out[c.Name] = true
		}
	}
	return out, nil
}

// clusterReady says whether a Cluster with readyServers and readyAgents Machines Ready
// is ready for a shape of servers and agents. Besides the Machines themselves, the
// Cluster's status must count them ready and available: CAPI's Cluster controller
// copies those counts from the control plane's status (and the MachineDeployments'),
// which follow the Machines' conditions a few passes later. A cluster counted ready
// before them made the idle window start while the last clusters' control plane and
// Cluster status writes were still on their way, and counted those writes as idle ones
// in some runs and not in others (2026-12-03).
func clusterReady(c *clusterv1.Cluster, readyServers, readyAgents, servers, agents int) bool {
	if !conditions.IsTrue(c, clusterv1.AvailableCondition) || readyServers < servers || readyAgents < agents {
		return false
	}
	atLeast := func(n *int32, want int) bool { return int(ptr.Deref(n, 0)) >= want }
	cp := c.Status.ControlPlane
	if cp == nil || !atLeast(cp.ReadyReplicas, servers) || !atLeast(cp.AvailableReplicas, servers) {
		return false
	}
	if agents == 0 {
		return true
	}
	w := c.Status.Workers
	return w != nil && atLeast(w.ReadyReplicas, agents) && atLeast(w.AvailableReplicas, agents)
}

// waitAll polls until every cluster in created is ready or ctx ends, and returns how
// long each took from its creation. A cluster not ready by then is missing from the
// result.
func (r *readiness) waitAll(ctx context.Context, created map[string]time.Time, progress func(ready, total int)) (map[string]time.Duration, error) {
	took := map[string]time.Duration{}
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	lastReport := time.Now()
	for len(took) < len(created) {
		select {
		case <-ctx.Done():
			return took, fmt.Errorf("%d of %d clusters ready when the wait ended: %w", len(took), len(created), ctx.Err())
		case <-t.C:
		}
		ready, err := r.readyClusters(ctx)
		if err != nil {
			return took, err
		}
		now := time.Now()
		for name := range ready {
			if at, ok := created[name]; ok {
				if _, seen := took[name]; !seen {
					took[name] = now.Sub(at)
				}
			}
		}
		if progress != nil && now.Sub(lastReport) > 10*time.Second {
			progress(len(took), len(created))
			lastReport = now
		}
	}
	return took, nil
}

// percentiles of a set of durations: p50, p90 and max, by the nearest-rank method.
func percentiles(ds map[string]time.Duration) (p50, p90, maxD time.Duration) {
	all := make([]time.Duration, 0, len(ds))
	for _, d := range ds {
		all = append(all, d)
	}
	return percentilesOf(all)
}

// percentilesOf is percentiles of a slice, which it sorts.
func percentilesOf(all []time.Duration) (p50, p90, maxD time.Duration) {
	if len(all) == 0 {
		return 0, 0, 0
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(all))+0.999999) - 1
		return all[max(0, min(i, len(all)-1))]
	}
	return rank(0.5), rank(0.9), all[len(all)-1]
}

// missing are the names in created that are not in done.
func missing[T any](created map[string]time.Time, done map[string]T) []string {
	var out []string
	for name := range created {
		if _, ok := done[name]; !ok {
			out = append(out, name)
		}
	}
	return out
}

// sortedNames are the names of created, in order.
func sortedNames(created map[string]time.Time) []string {
	out := make([]string, 0, len(created))
	for name := range created {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// serverGaps are, per cluster, the times between the creations of its consecutive
// server Machines (creation timestamps, to the second): how long each server after the
// first waited for the one before it. Both providers add servers one at a time, each
// once the last one is a healthy etcd member, so these gaps are most of an HA
// cluster's provisioning time.
func (r *readiness) serverGaps(ctx context.Context) ([]time.Duration, error) {
	machines := &clusterv1.MachineList{}
	if err := r.cache.List(ctx, machines, client.HasLabels{clusterv1.MachineControlPlaneLabel}); err != nil {
		return nil, err
	}
	created := map[string][]time.Time{}
	for i := range machines.Items {
		m := &machines.Items[i]
		created[m.Spec.ClusterName] = append(created[m.Spec.ClusterName], m.CreationTimestamp.Time)
	}
	var gaps []time.Duration
	for _, ts := range created {
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		for i := 1; i < len(ts); i++ {
			gaps = append(gaps, ts[i].Sub(ts[i-1]))
		}
	}
	return gaps, nil
}

// medianDuration is the median of ds (nearest rank), 0 when there are none.
func medianDuration(ds []time.Duration) time.Duration {
	p50, _, _ := percentilesOf(ds)
	return p50
}
