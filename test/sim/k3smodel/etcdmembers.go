package k3smodel

import (
	"fmt"
	"maps"
	"strings"
)

// The Node annotations and label of k3s's etcd controllers (k3s pkg/etcd/etcd.go and
// member_controller.go, v1.34.9, v1.35.4, v1.36.2: "etcd." + version.Program +
// ".cattle.io/...", the program being k3s).
const (
	EtcdRemoveAnnotation          = "etcd.k3s.cattle.io/remove"
	EtcdRemovedNodeNameAnnotation = "etcd.k3s.cattle.io/removed-node-name"
	EtcdNodeNameAnnotation        = "etcd.k3s.cattle.io/node-name"
	EtcdNodeAddressAnnotation     = "etcd.k3s.cattle.io/node-address"
)

// EtcdRoleLabel (nodelabels.go) is set to "true" by k3s's metadata controller on every
// etcd Node (pkg/etcd/metadata_controller.go, handleSelf).

// MemberSync is what one sync of k3s's etcd member controller does with a Node
// (pkg/etcd/member_controller.go, etcdMemberHandler.sync).
type MemberSync struct {
	// Remove is the member to remove from etcd ("" for none). Done is applied once
	// the removal succeeded; Rejected when etcd refused it.
	Remove string
	// Done is the Node's annotations after the sync: the answer to a removal, or the
	// change made without one. Nil leaves the Node as it is.
	Done map[string]string
	// Rejected is the Node's annotations after etcd refused to remove its only voter
	// (rpctypes.ErrMemberNotEnoughStarted): k3s clears the request, so that it can be
	// asked again once there are more members.
	Rejected map[string]string
	// Err is the sync's error; k3s's controller (wrangler) retries the Node with
	// backoff and fails the same way for as long as the Node stays so.
	Err error
}

// SyncMember is k3s's member controller deciding about a Node with the given labels
// and annotations, on release r:
//   - a Node without the etcd role label (present at all: k3s checks presence, not
//     the value) is skipped; so is one without the remove annotation;
//   - with the remove annotation, the node-name and node-address annotations must be
//     there, else the sync fails ("node name annotation for node %s not found"), for
//     good: nothing puts them back on a removed member's Node but its own k3s;
//   - a Node with removed-node-name: if it differs from node-name, the member joined
//     again and both removal annotations are cleared; if equal, nothing happens;
//   - remove set to "true" (any case): the member named by node-name is removed; then
//     removed-node-name is set to that name, node-name and node-address are deleted,
//     and, from v1.34.2 (every release of v1.35 and v1.36; v1.32.10 too), the remove
//     annotation as well. Up to v1.34.1 it stays (pkg/etcd/member_controller.go at
//     "Update to v1.34.1", 67c23a20e3, against v1.34.2, 82fd4c5731).
//   - any other value of remove: nothing.
func (r Release) SyncMember(node string, labels, annotations map[string]string) MemberSync {
	if _, etcd := labels[EtcdRoleLabel]; !etcd {
		return MemberSync{}
	}
	request, asked := annotations[EtcdRemoveAnnotation]
	if !asked {
		return MemberSync{}
	}
	name, ok := annotations[EtcdNodeNameAnnotation]
	if !ok {
		return MemberSync{Err: fmt.Errorf("node name annotation for node %s not found", node)}
	}
	if _, ok := annotations[EtcdNodeAddressAnnotation]; !ok {
		return MemberSync{Err: fmt.Errorf("node address annotation for node %s not found", node)}
	}
	if removed, ok := annotations[EtcdRemovedNodeNameAnnotation]; ok {
		if removed == name {
			return MemberSync{}
		}
		return MemberSync{Done: without(annotations, EtcdRemovedNodeNameAnnotation, EtcdRemoveAnnotation)}
	}
	if !strings.EqualFold(request, "true") {
		return MemberSync{}
	}
	gone := []string{EtcdNodeNameAnnotation, EtcdNodeAddressAnnotation}
	if r.ConsumesEtcdRemoveAnnotation() {
		gone = append(gone, EtcdRemoveAnnotation)
	}
	done := without(annotations, gone...)
	done[EtcdRemovedNodeNameAnnotation] = name
	return MemberSync{Remove: name, Done: done, Rejected: without(annotations, EtcdRemoveAnnotation)}
}

// ConsumesEtcdRemoveAnnotation says whether k3s's member controller deletes the
// remove annotation when it records a removal: from v1.34.2 on (see SyncMember).
func (r Release) ConsumesEtcdRemoveAnnotation() bool { return r.AtLeast(34, 2) }

// without is a copy of m without the keys.
func without(m map[string]string, keys ...string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	for _, k := range keys {
		delete(out, k)
	}
	return out
}
