package k3s

import "strings"

// The Node annotations and label through which k3s's etcd controllers publish and
// change membership (k3s pkg/etcd/member_controller.go, metadata_controller.go and
// etcd.go, read at v1.34.9, v1.35.4 and v1.36.2).
const (
	// EtcdRemoveAnnotation, set to "true" (any case) on an etcd Node, asks k3s's member
	// controller to remove the Node's member.
	EtcdRemoveAnnotation = "etcd.k3s.cattle.io/remove"
	// EtcdRemovedNodeNameAnnotation is set by the member controller once it removed the
	// member; its value is the member's name (not the Node's).
	EtcdRemovedNodeNameAnnotation = "etcd.k3s.cattle.io/removed-node-name"
	// EtcdNodeNameAnnotation is the name of the member running on the Node, kept by k3s
	// on the Node itself; the member controller needs it to remove the member, and
	// deletes it when it has.
	EtcdNodeNameAnnotation = "etcd.k3s.cattle.io/node-name"
	// EtcdRoleLabel is set to "true" by k3s on the Nodes of etcd members.
	EtcdRoleLabel = "node-role.kubernetes.io/etcd"
)

// EtcdRemovalRequested says the annotations ask k3s to remove the Node's member.
func EtcdRemovalRequested(annotations map[string]string) bool {
	return strings.EqualFold(annotations[EtcdRemoveAnnotation], "true")
}

// EtcdMemberRemoved says k3s has removed the Node's etcd member, under every
// behaviour of its member controller. Up to v1.34.1 it kept the remove annotation
// beside removed-node-name; from v1.34.2 (and v1.32.10, v1.35.0, v1.36.0) it deletes
// it, with node-name and node-address. So removed-node-name alone tells, unless the
// Node names a different member now: k3s itself reads that as a member that joined
// again ("removed node name does not match current node name").
func EtcdMemberRemoved(annotations map[string]string) bool {
	removed := annotations[EtcdRemovedNodeNameAnnotation]
	if removed == "" {
		return false
	}
	current := annotations[EtcdNodeNameAnnotation]
	return current == "" || current == removed
}
