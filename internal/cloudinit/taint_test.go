package cloudinit

import (
	"reflect"
	"testing"
)

// uninitializedTaint is Cluster API's taint in k3s's node-taint form, written out
// rather than taken from the renderer.
const uninitializedTaint = "node.cluster.x-k8s.io/uninitialized:NoSchedule"

// TestAgentsRegisterUninitialized: an agent's kubelet registers its Node with Cluster
// API's uninitialized taint (after the user's taints, once), so that nothing is
// scheduled on it before CAPI's Machine controller has matched it and removes the
// taint; servers get only the user's taints.
func TestAgentsRegisterUninitialized(t *testing.T) {
	cases := []struct {
		name string
		role Role
		user []string
		want []any
	}{
		{"agent", Agent, nil, anyList(uninitializedTaint)},
		{"agent with taints", Agent, []string{"gpu=true:NoSchedule"}, anyList("gpu=true:NoSchedule", uninitializedTaint)},
		{"agent that names it already", Agent, []string{uninitializedTaint, "a:NoExecute"}, anyList(uninitializedTaint, "a:NoExecute")},
		{"first server", ServerInit, nil, nil},
		{"joining server", ServerJoin, []string{"gpu=true:NoSchedule"}, anyList("gpu=true:NoSchedule")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := minimal(tc.role)
			in.Spec.AgentConfig.NodeTaints = tc.user
			out, err := Render(in)
			if err != nil {
				t.Fatal(err)
			}
			got := parse(t, out).k3sConfig(t)["node-taint"]
			if tc.want == nil && got != nil || tc.want != nil && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("node-taint = %#v, want %#v", got, tc.want)
			}
			// Ignition writes the same config.yaml.
			checkSameAsCloudConfig(t, in)
			if len(tc.user) > 0 && len(in.Spec.AgentConfig.NodeTaints) != len(tc.user) {
				t.Errorf("the input's nodeTaints changed: %v", in.Spec.AgentConfig.NodeTaints)
			}
		})
	}
}
