package k3s

import (
	"path"
	"slices"
	"strings"
)

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

// Where k3s's cluster-reset reads the snapshot named by cluster-reset-restore-path
// (k3s pkg/etcd/etcd.go, Reset, and pkg/etcd/s3/s3.go, Download; the same in v1.34,
// v1.35 and v1.36): with etcd-s3 off, a file on the machine; with etcd-s3 on, always
// the object path.Join(etcd-s3-folder, value) in the bucket, downloaded to
// filepath.Join(etcd-snapshot-dir, value) first. A local file beside etcd-s3 thus
// needs etcd-s3 turned off for the restore, which a flag on k3s's command line does
// (flags given there win over config.yaml, pkg/configfilearg/parser.go).

// EtcdS3SnapshotName says whether name can be a snapshot in the bucket's folder: not
// an absolute path (a local file), no ".." element (it would read another folder's
// object and write outside the snapshot directory), not ending in "/" (a folder, no
// object).
func EtcdS3SnapshotName(name string) bool {
	return name != "" && !path.IsAbs(name) && !strings.HasSuffix(name, "/") && !slices.Contains(strings.Split(name, "/"), "..")
}
