package sim

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestRegisterRecordsTaintsAtCreation: the taints a Node was created with stay on
// record after someone (Cluster API) removed one, and registering again (a kubelet
// restart) neither puts it back on the Node nor changes the record.
func TestRegisterRecordsTaintsAtCreation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "ns", Name: "c"}
	p := &Provider{clusters: map[client.ObjectKey]*workloadCluster{key: {key: key}}}
	wc := p.clusters[key]
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithStatusSubresource(&corev1.Node{}).Build()
	n := node{name: "agent-0", providerID: "sim://ns/agent-0", role: roleAgent, version: "v1.35.4+k3s1",
		taints: []string{"node.cluster.x-k8s.io/uninitialized:NoSchedule", "gpu=true:NoExecute"}}
	want := []corev1.Taint{
		uninitialized,
		{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoExecute},
	}
	if err := n.register(ctx, c, wc); err != nil {
		t.Fatal(err)
	}
	obj := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: n.name}, obj); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(obj.Spec.Taints, want) {
		t.Errorf("Node taints = %v, want %v", obj.Spec.Taints, want)
	}
	obj.Spec.Taints = want[1:]
	if err := c.Update(ctx, obj); err != nil {
		t.Fatal(err)
	}
	if err := n.register(ctx, c, wc); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: n.name}, obj); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(obj.Spec.Taints, want[1:]) {
		t.Errorf("after registering again the Node's taints are %v, want %v", obj.Spec.Taints, want[1:])
	}
	if got := p.RegisteredTaints(key, n.name); !reflect.DeepEqual(got, want) {
		t.Errorf("RegisteredTaints = %v, want %v", got, want)
	}
	if got := p.RegisteredTaints(key, "other"); got != nil {
		t.Errorf("RegisteredTaints of an unknown Node = %v, want nil", got)
	}
}
