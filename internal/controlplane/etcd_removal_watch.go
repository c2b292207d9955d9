package controlplane

import (
	"context"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A member removal is confirmed by k3s on the Node (removed-node-name), and this
// controller learns it from its cached Node, fed by a watch through the control-plane
// endpoint. Real k3s showed why that is not enough: the server whose member k3s
// removed keeps accepting connections on 6443 while its API server times out every
// request (its etcd is gone), and a load balancer that checks backends by TCP, as many
// cloud load balancers do, keeps it in rotation. If the ClusterCache's connection (one
// HTTP/2 connection carries every watch) went to that server, no watch event comes,
// the hook is never released, and the rollout or scale-down waits for ever (seen on
// real k3s v1.35.4 during a rolling upgrade: the connection pinned to the removed
// server for as long as the machine lived). So while a removal is in flight the pass
// asks to be woken, and reads those Nodes again on a connection of its own, which the
// load balancer sends to a server that still answers.

// removalPoll is how often a pass looks again while k3s has a removal in flight.
const removalPoll = 15 * time.Second

// freshReadTimeout bounds one read on a new connection: a read that lands on the
// removed server times out rather than waiting for the API server's own limit.
const freshReadTimeout = 10 * time.Second

// nodeReader reads one Node.
type nodeReader func(ctx context.Context, name string) (*corev1.Node, error)

// refreshInFlightRemovals reads again, with read, the Nodes of the leaving servers
// (leavingInFlight) and puts what k3s confirmed into seen. It reports whether a
// removal is still in flight, for the pass to be woken. A failed read leaves the
// cached Node: the next pass tries again.
func refreshInFlightRemovals(ctx context.Context, seen *observed, leaving []*clusterv1.Machine, read nodeReader) bool {
	inFlight := false
	for _, m := range leaving {
		n := seen.nodes[m.Name]
		live, err := read(ctx, n.Name)
		if err != nil || live == nil {
			inFlight = true
			continue
		}
		seen.nodes[m.Name] = live
		inFlight = inFlight || removalInFlight(live)
	}
	return inFlight
}

// leavingInFlight are the leaving servers whose cached Node shows a removal k3s has
// not confirmed.
func leavingInFlight(seen observed) []*clusterv1.Machine {
	var out []*clusterv1.Machine
	for _, m := range seen.machines {
		if n := seen.nodes[m.Name]; !m.DeletionTimestamp.IsZero() && hasEtcdHook(m) && n != nil && removalInFlight(n) {
			out = append(out, m)
		}
	}
	return out
}

// freshNodeReader reads Nodes of the cluster on a connection of its own: the REST
// config of the ClusterCache with a dialer set, which keeps client-go from sharing the
// cached transport (and so the cached connection) with the ClusterCache's clients.
func (r *Reconciler) freshNodeReader(ctx context.Context, cluster client.ObjectKey) (nodeReader, func(), error) {
	cfg, err := r.ClusterCache.GetRESTConfig(ctx, cluster)
	if err != nil {
		return nil, nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = freshReadTimeout
	cfg.Dial = (&net.Dialer{Timeout: freshReadTimeout}).DialContext
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("a fresh connection to the workload cluster: %w", err)
	}
	c, err := client.New(cfg, client.Options{HTTPClient: httpClient, Scheme: r.Client.Scheme()})
	if err != nil {
		return nil, nil, err
	}
	read := func(ctx context.Context, name string) (*corev1.Node, error) {
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return nil, err
		}
		return n, nil
	}
	return read, httpClient.CloseIdleConnections, nil
}
