package bootstrap

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// The wake-up of waiting configs must follow the field that role() reads: a Cluster
// whose ControlPlaneInitialized condition turned true before the field must still
// wake them when the field turns true.
func TestClusterControlPlaneInitializedFollowsTheContractField(t *testing.T) {
	cluster := func(field bool, condition bool) *clusterv1.Cluster {
		c := &clusterv1.Cluster{}
		c.Status.Initialization.ControlPlaneInitialized = ptr.To(field)
		status := metav1.ConditionFalse
		if condition {
			status = metav1.ConditionTrue
		}
		c.Status.Conditions = []metav1.Condition{{Type: clusterv1.ClusterControlPlaneInitializedCondition, Status: status}}
		return c
	}
	p := clusterControlPlaneInitialized()
	for _, tc := range []struct {
		name     string
		old, new *clusterv1.Cluster
		want     bool
	}{
		{"field turns true with the condition", cluster(false, false), cluster(true, true), true},
		{"condition first: no wake-up yet", cluster(false, false), cluster(false, true), false},
		{"field after the condition: wake-up", cluster(false, true), cluster(true, true), true},
		{"already initialized", cluster(true, true), cluster(true, true), false},
		{"never initialized", cluster(false, false), cluster(false, false), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("predicate = %v, want %v", got, tc.want)
			}
		})
	}
}
