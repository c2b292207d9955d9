package e2e

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
)

// dump logs the conditions of the scenario's Machines, KThreesConfigs, control plane
// and SimMachines, so that a failed wait says where things stand.
func (s *scenario) dump() {
	var b strings.Builder
	lists := []struct {
		kind string
		list client.ObjectList
		each func(client.ObjectList) map[string][]metav1.Condition
	}{
		{"Machine", &clusterv1.MachineList{}, func(l client.ObjectList) map[string][]metav1.Condition {
			out := map[string][]metav1.Condition{}
			for _, o := range l.(*clusterv1.MachineList).Items {
				out[o.Name] = o.Status.Conditions
			}
			return out
		}},
		{"KThreesConfig", &bootstrapv1.KThreesConfigList{}, func(l client.ObjectList) map[string][]metav1.Condition {
			out := map[string][]metav1.Condition{}
			for _, o := range l.(*bootstrapv1.KThreesConfigList).Items {
				out[fmt.Sprintf("%s (labels %v, owners %d)", o.Name, o.Labels, len(o.OwnerReferences))] = o.Status.Conditions
			}
			return out
		}},
		{"KThreesControlPlane", &controlplanev1.KThreesControlPlaneList{}, func(l client.ObjectList) map[string][]metav1.Condition {
			out := map[string][]metav1.Condition{}
			for _, o := range l.(*controlplanev1.KThreesControlPlaneList).Items {
				out[o.Name] = o.Status.Conditions
			}
			return out
		}},
		{"SimMachine", &simv1.SimMachineList{}, func(l client.ObjectList) map[string][]metav1.Condition {
			out := map[string][]metav1.Condition{}
			for _, o := range l.(*simv1.SimMachineList).Items {
				out[o.Name] = o.Status.Conditions
			}
			return out
		}},
	}
	for _, l := range lists {
		if err := env.Client.List(s.ctx, l.list, client.InNamespace(s.ns)); err != nil {
			fmt.Fprintf(&b, "listing %s: %v\n", l.kind, err)
			continue
		}
		for name, conds := range l.each(l.list) {
			fmt.Fprintf(&b, "%s %s:\n", l.kind, name)
			for _, c := range conds {
				fmt.Fprintf(&b, "  %s=%s %s: %q\n", c.Type, c.Status, c.Reason, c.Message)
			}
		}
	}
	c := &clusterv1.Cluster{}
	if err := env.Client.Get(s.ctx, s.key, c); err == nil {
		fmt.Fprintf(&b, "Cluster initialization: %+v\n", c.Status.Initialization)
	}
	s.t.Log("state of the cluster's objects:\n" + b.String())
}
