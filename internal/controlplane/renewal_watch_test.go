package controlplane

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// An agent's certificate report wakes its control plane; nothing else of an agent
// does, and servers are the Owns watch's.
func TestAgentCertificatesChanged(t *testing.T) {
	p := agentCertificatesChanged()
	agent := func(expiry string) *clusterv1.Machine {
		m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "md-a", Labels: map[string]string{clusterv1.ClusterNameLabel: "c1"}}}
		if expiry != "" {
			m.Annotations = map[string]string{clusterv1.MachineCertificatesExpiryDateAnnotation: expiry}
		}
		return m
	}
	server := agent("2027-01-01T00:00:00Z")
	server.Labels[clusterv1.MachineControlPlaneLabel] = ""
	relabelled := agent("2027-01-01T00:00:00Z")
	relabelled.Labels["x"] = "y"
	cases := []struct {
		name     string
		old, new *clusterv1.Machine
		want     bool
	}{
		{"report written", agent(""), agent("2027-01-01T00:00:00Z"), true},
		{"report moved", agent("2027-01-01T00:00:00Z"), agent("2028-01-01T00:00:00Z"), true},
		{"report removed", agent("2027-01-01T00:00:00Z"), agent(""), true},
		{"another change", agent("2027-01-01T00:00:00Z"), relabelled, false},
		{"a server", agent(""), server, false},
		// A report read before the agent's Node was known is read again once it is.
		{"node known", agent("2027-01-01T00:00:00Z"), withNode(agent("2027-01-01T00:00:00Z"), "md-a", ""), true},
		{"provider ID known", agent(""), withNode(agent(""), "", "k3s://md-a"), true},
		{"a server's node known", server, withNode(server.DeepCopy(), "md-a", ""), false},
	}
	for _, tc := range cases {
		if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: update passes = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !p.Create(event.CreateEvent{Object: agent("2027-01-01T00:00:00Z")}) || p.Create(event.CreateEvent{Object: agent("")}) {
		t.Errorf("create: an agent with a report passes, one without does not")
	}
	if p.Delete(event.DeleteEvent{Object: agent("2027-01-01T00:00:00Z")}) {
		t.Errorf("a deleted agent passes")
	}
}

func withNode(m *clusterv1.Machine, node, providerID string) *clusterv1.Machine {
	m.Status.NodeRef.Name, m.Spec.ProviderID = node, providerID
	return m
}

func TestAgentToControlPlane(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster, kcp := newClusterWithControlPlane(t, ns, true)
	r := &Reconciler{Client: env.Client}
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "md-a", Labels: map[string]string{clusterv1.ClusterNameLabel: cluster.Name}}}
	got := r.agentToControlPlane(context.Background(), m)
	if len(got) != 1 || got[0].Name != kcp.Name || got[0].Namespace != ns {
		t.Errorf("requests = %v, want %s/%s", got, ns, kcp.Name)
	}
	m.Labels = nil
	if got := r.agentToControlPlane(context.Background(), m); len(got) != 0 {
		t.Errorf("a Machine without a cluster maps to %v", got)
	}
}
