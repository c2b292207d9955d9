package k3s

// Facts about a k3s server as the control plane meets it from outside.
const (
	// ControlPlaneRoleLabel is set to "true" by k3s on every server's Node, with or
	// without embedded etcd (k3s pkg/util/labels.go, set in pkg/server/server.go; read
	// at v1.34.9, v1.35.4 and v1.36.2). An etcd-only server has EtcdRoleLabel instead.
	ControlPlaneRoleLabel = "node-role.kubernetes.io/control-plane"
	// DefaultHTTPSListenPort is k3s's https-listen-port when a server does not set one:
	// the port of its supervisor and API (k3s pkg/cli/cmds/server.go, v1.34-v1.36).
	DefaultHTTPSListenPort = 6443
)
