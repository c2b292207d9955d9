package k3smodel

// The role labels k3s puts on a Node, per minor.
//
//   - Every server whose agent runs gets node-role.kubernetes.io/control-plane=true
//     (pkg/server/server.go, setNodeLabelsAndAnnotations; pkg/util/labels.go), in
//     v1.34.9, v1.35.4 and v1.36.2.
//   - An etcd member gets node-role.kubernetes.io/etcd=true from k3s's etcd metadata
//     controller (pkg/etcd/metadata_controller.go), in the same releases; a server of a
//     datastore cluster runs no etcd and gets no etcd label.
//   - node-role.kubernetes.io/master is gone: k3s commit 729403345b ("remove master
//     role labels", May 2025) removed it before v1.34 branched; no supported minor's
//     source sets it (checked in all three commits of Minors).

// Role label keys k3s uses.
const (
	ControlPlaneRoleLabel = "node-role.kubernetes.io/control-plane"
	EtcdRoleLabel         = "node-role.kubernetes.io/etcd"
)

// ServerRoleLabels are the role labels k3s gives a server Node; etcd says whether
// the server is an etcd member. Every minor in Minors agrees; a minor that differs
// gets its own case here.
func ServerRoleLabels(etcd bool) map[string]string {
	labels := map[string]string{ControlPlaneRoleLabel: "true"}
	if etcd {
		labels[EtcdRoleLabel] = "true"
	}
	return labels
}
