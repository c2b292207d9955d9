package controlplane

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// TestRefreshInFlightRemovals: the cached Node still shows the removal k3s was asked
// for, because the watch's connection went to the server that left etcd (seen on real
// k3s); a read on a new connection shows k3s's confirmation, and the hook goes. With
// the cached Node alone, the pass released nothing and asked to be woken by nothing.
func TestRefreshInFlightRemovals(t *testing.T) {
	initialized := &controlplanev1.KThreesControlPlane{}
	initialized.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	stale := func() observed {
		return etcdSeen([]*clusterv1.Machine{etcdServer("a", etcdDeletedAt(1), etcdAtHook), etcdServer("b"), etcdServer("c")},
			etcdMember("a", etcdAsked), etcdMember("b"), etcdMember("c"))
	}
	if plan := planEtcdMembership(&clusterv1.Cluster{}, initialized, stale()); len(plan.release) != 0 {
		t.Fatalf("the stale cache alone released %v", plan.release)
	}

	confirmed := etcdMember("a", etcdRemovedConsumed)
	reads := 0
	seen := stale()
	inFlight := refreshInFlightRemovals(context.Background(), &seen, leavingInFlight(seen), func(_ context.Context, name string) (*corev1.Node, error) {
		reads++
		if name != "a" {
			t.Errorf("read Node %s: only the leaving server's Node is read again", name)
		}
		return confirmed.DeepCopy(), nil
	})
	if inFlight || reads != 1 {
		t.Errorf("in flight %v after %d reads, want false after 1", inFlight, reads)
	}
	if plan := planEtcdMembership(&clusterv1.Cluster{}, initialized, seen); len(plan.release) != 1 || plan.release[0].Name != "a" {
		t.Errorf("released %v, want a's hook once k3s's confirmation is read", plan.release)
	}

	seen = stale()
	inFlight = refreshInFlightRemovals(context.Background(), &seen, leavingInFlight(seen), func(context.Context, string) (*corev1.Node, error) {
		return nil, errors.New("context deadline exceeded")
	})
	if !inFlight || !removalInFlight(seen.nodes["a"]) {
		t.Errorf("a failed read: in flight %v, cached Node kept %v; want the pass woken again with the cache kept", inFlight, removalInFlight(seen.nodes["a"]))
	}

	seen = stale()
	inFlight = refreshInFlightRemovals(context.Background(), &seen, leavingInFlight(seen), func(context.Context, string) (*corev1.Node, error) {
		return etcdMember("a", etcdAsked), nil
	})
	if !inFlight {
		t.Error("k3s has not confirmed yet: the pass must be woken again")
	}

	calm := etcdSeen([]*clusterv1.Machine{etcdServer("a"), etcdServer("b")}, etcdMember("a"), etcdMember("b"))
	if refreshInFlightRemovals(context.Background(), &calm, leavingInFlight(calm), func(context.Context, string) (*corev1.Node, error) {
		t.Error("no removal in flight: nothing is read")
		return nil, nil
	}) {
		t.Error("no removal in flight, yet the pass asks to be woken")
	}
}
