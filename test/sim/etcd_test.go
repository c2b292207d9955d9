package sim

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// etcdNode is the Node of member "<name>-x" (testCluster's names) on a release,
// asked to leave etcd.
func etcdNode(name, release string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{etcdRoleLabel: "true"}, Annotations: map[string]string{
			etcdNodeNameAnnotation: name + "-x", etcdNodeAddressAnnotation: "10.0.0.1", k3smodel.EtcdRemoveAnnotation: "true",
		}},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: release}},
	}
}

// TestEtcdMemberControllerPlaysTheNodesRelease: the simulator answers a removal
// request as the k3s release on the Node does, and fails as k3s does when asked
// again once a newer k3s consumed the request.
func TestEtcdMemberControllerPlaysTheNodesRelease(t *testing.T) {
	t.Parallel()
	c, _ := testCluster("a", "b", "c", "d")

	after, err := c.syncEtcdMember(etcdNode("a", "v1.34.1+k3s1"))
	if err != nil || after == nil {
		t.Fatalf("sync on v1.34.1 = %v, %v", after, err)
	}
	if a := after.Annotations; a[k3smodel.EtcdRemoveAnnotation] != "true" || a[k3smodel.EtcdRemovedNodeNameAnnotation] != "a-x" || a[etcdNodeNameAnnotation] != "" {
		t.Errorf("v1.34.1 leaves %v, want remove kept beside removed-node-name, node-name gone", a)
	}
	// v1.34.1 then fails on each later sync of that Node (the request is still there,
	// the member's name is not): what k3s v1.34.2 fixed by consuming the request.
	if _, err := c.syncEtcdMember(after); err == nil || !strings.Contains(err.Error(), "node name annotation for node a not found") {
		t.Errorf("syncing v1.34.1's answer again = %v, want k3s's missing node name error", err)
	}

	after, err = c.syncEtcdMember(etcdNode("b", "v1.36.3+k3s1"))
	if err != nil || after == nil {
		t.Fatalf("sync on v1.36.3 = %v, %v", after, err)
	}
	if a := after.Annotations; len(a) != 1 || a[k3smodel.EtcdRemovedNodeNameAnnotation] != "b-x" {
		t.Errorf("v1.36.3 leaves %v, want removed-node-name alone", a)
	}
	if got := c.memberNames(); !slices.Equal(got, []string{"c-x", "d-x"}) {
		t.Errorf("members = %v, want c-x d-x", got)
	}
	// Asked again: the member's name is gone, and k3s fails on every retry.
	after.Annotations[k3smodel.EtcdRemoveAnnotation] = "true"
	if _, err := c.syncEtcdMember(after); err == nil || !strings.Contains(err.Error(), "node name annotation for node b not found") {
		t.Errorf("asking v1.36.3 again = %v, want k3s's missing node name error", err)
	}

	if _, err := c.syncEtcdMember(etcdNode("c", "v1.31.4+k3s1")); err == nil {
		t.Error("a Node on a minor the simulator does not play was synced")
	}
}

func TestEtcdMemberControllerRefusesTheOnlyVoter(t *testing.T) {
	t.Parallel()
	c, _ := testCluster("a")
	after, err := c.syncEtcdMember(etcdNode("a", "v1.35.4+k3s1"))
	if err != nil || after == nil {
		t.Fatalf("sync = %v, %v", after, err)
	}
	if _, asked := after.Annotations[k3smodel.EtcdRemoveAnnotation]; asked || after.Annotations[k3smodel.EtcdRemovedNodeNameAnnotation] != "" {
		t.Errorf("annotations = %v, want the request cleared and no removal recorded", after.Annotations)
	}
	if got := c.memberNames(); !slices.Equal(got, []string{"a-x"}) {
		t.Errorf("members = %v, want a-x", got)
	}
}
