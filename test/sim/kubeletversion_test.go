package sim

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestKubeletReportsItsVersionAfterARestore: a Node rolled back by a restore to the
// version of the snapshot's time shows again the version its kubelet runs (an
// upgrade after the snapshot), and a Node on a cluster never restored is left alone.
func TestKubeletReportsItsVersionAfterARestore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "ns", Name: "c"}
	wc := &workloadCluster{key: key}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithStatusSubresource(&corev1.Node{}).Build()
	n := node{name: "agent-0", providerID: "sim://ns/agent-0", role: roleAgent, version: "v1.35.4+k3s1"}
	if err := n.register(ctx, c, wc); err != nil {
		t.Fatal(err)
	}
	// Upgraded after the snapshot; the restore brings back the Node as it was.
	wc.kubeletRuns(n.name, "v1.36.2+k3s1")
	version := func() string {
		obj := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: n.name}, obj); err != nil {
			t.Fatal(err)
		}
		return obj.Status.NodeInfo.KubeletVersion
	}
	if err := reportKubeletVersion(ctx, c, wc, n.name); err != nil {
		t.Fatal(err)
	}
	if got := version(); got != "v1.36.2+k3s1" {
		t.Errorf("Node's kubelet version after the kubelet's report: %s, want v1.36.2+k3s1", got)
	}
	if err := reportKubeletVersion(ctx, c, wc, "gone"); err != nil {
		t.Errorf("a Node the restore did not bring back: %v", err)
	}
	// Never restored: nothing is read or written.
	wc.kubeletRuns(n.name, "v1.37.0+k3s1")
	if err := wc.reportAfterRestore(ctx, n.name); err != nil {
		t.Fatal(err)
	}
	if got := version(); got != "v1.36.2+k3s1" {
		t.Errorf("Node's kubelet version on a cluster never restored: %s, want it untouched", got)
	}
}
