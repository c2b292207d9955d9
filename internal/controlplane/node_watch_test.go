package controlplane

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/capk3s/capk3s/internal/k3s"
)

// Only Node changes that this controller reads wake it: kubelet heartbeats and agents'
// Nodes do not.
func TestServerNodeChanged(t *testing.T) {
	server := func(opts ...func(*corev1.Node)) *corev1.Node {
		n := etcdMember("s1", opts...)
		n.Labels[k3s.ControlPlaneRoleLabel] = "true"
		n.Status.Conditions[0].LastHeartbeatTime = metav1.Unix(1_700_000_000, 0)
		return n
	}
	agent := func(opts ...func(*corev1.Node)) *corev1.Node {
		n := etcdMember("a1", append([]func(*corev1.Node){etcdNotMember}, opts...)...)
		return n
	}
	heartbeat := func(n *corev1.Node) {
		n.Status.Conditions[0].LastHeartbeatTime = metav1.Unix(1_700_000_060, 0)
		n.Status.Allocatable = corev1.ResourceList{}
		n.ResourceVersion = "2"
	}
	notReady := etcdNotReady
	withProviderID := func(n *corev1.Node) { n.Spec.ProviderID = "sim://s1" }
	becomesServer := func(n *corev1.Node) { n.Labels[k3s.ControlPlaneRoleLabel] = "true" }

	p := serverNodeChanged()
	for _, tc := range []struct {
		name          string
		before, after *corev1.Node
		want          bool
	}{
		{"server heartbeat", server(), server(heartbeat), false},
		{"server becomes NotReady", server(), server(notReady), true},
		{"server Ready again", server(notReady), server(), true},
		{"k3s asked to remove the member", server(), server(etcdAsked), true},
		{"k3s confirms the removal", server(etcdAsked), server(etcdRemoved), true},
		{"server gets its provider ID", server(), server(withProviderID), true},
		{"server loses its etcd role", server(), server(etcdNotMember), true},
		{"agent becomes NotReady", agent(), agent(notReady), false},
		{"agent heartbeat", agent(), agent(heartbeat), false},
		{"Node labelled as a server late", agent(), agent(becomesServer), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Update(event.UpdateEvent{ObjectOld: tc.before, ObjectNew: tc.after}); got != tc.want {
				t.Errorf("Update = %v, want %v", got, tc.want)
			}
		})
	}
	if !p.Create(event.CreateEvent{Object: server()}) || p.Create(event.CreateEvent{Object: agent()}) {
		t.Error("Create must pass server Nodes only")
	}
	if !p.Delete(event.DeleteEvent{Object: server()}) || p.Delete(event.DeleteEvent{Object: agent()}) {
		t.Error("Delete must pass server Nodes only")
	}
}
