package v1beta2

// NodeReadyAnnotation on a SimMachine makes the simulator hold the Ready condition of
// the machine's Node, so that a test can make a joined machine unhealthy and healthy
// again. Its values:
//   - "false": the kubelet reports the Node NotReady (its container runtime is down)
//     while k3s, and a server's etcd member, keep running;
//   - "unknown": k3s has stopped on the machine: the kubelet posts nothing, the node
//     lifecycle controller turns the Node's conditions Unknown, and a server's etcd
//     member is down, which counts against etcd quorum;
//   - "true", or no annotation: the Node is Ready.
//
// Any other value changes nothing, and the SimMachine's NodeReady condition says why.
const NodeReadyAnnotation = "infrastructure.sim.capk3s.io/node-ready"

// Values of NodeReadyAnnotation.
const (
	NodeReadyTrue    = "true"
	NodeReadyFalse   = "false"
	NodeReadyUnknown = "unknown"
)
