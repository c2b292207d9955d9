package sim

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// node is what a machine's kubelet registers.
type node struct {
	name       string
	providerID string
	role       string
	version    string
	address    string
	// etcdMember is the member's name on servers; "" on servers of a datastore cluster.
	etcdMember string
	labels     []string
	taints     []string
}

// machineAddress is a made-up, stable private address for a machine.
func machineAddress(name string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	sum := h.Sum32()
	return fmt.Sprintf("10.%d.%d.%d", 100+sum%100, (sum>>8)%256, 1+(sum>>16)%254)
}

// nodeFor describes the Node k3s registers for a machine from its bootstrap data:
// the name is k3s's node-name option or the machine's hostname.
func nodeFor(b *bootData, hostname, providerID string) (node, error) {
	n := node{
		name: hostname, providerID: providerID, role: b.install.role,
		version: b.install.version, address: machineAddress(hostname),
	}
	if name := b.str("node-name"); name != "" {
		n.name = name
	}
	var err error
	if n.labels, err = stringList(b.k3sConfig, "node-label"); err != nil {
		return n, err
	}
	if n.taints, err = stringList(b.k3sConfig, "node-taint"); err != nil {
		return n, err
	}
	return n, nil
}

// stringList reads a k3s list option, which may also be given as a single string.
func stringList(cfg map[string]any, key string) ([]string, error) {
	switch v := cfg[key].(type) {
	case nil:
		return nil, nil
	case string:
		return []string{v}, nil
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%s: %v is not a string", key, e)
			}
			out = append(out, s)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("%s is %T, not a list of strings", key, v)
	}
}

// object is the Node as k3s's kubelet and agent make it: k3s's labels and
// annotations, the user's labels and taints.
func (n node) object() (*corev1.Node, error) {
	labels := map[string]string{
		corev1.LabelHostname:           n.name,
		corev1.LabelOSStable:           "linux",
		corev1.LabelArchStable:         "amd64",
		corev1.LabelInstanceTypeStable: "k3s",
	}
	annotations := map[string]string{
		"k3s.io/hostname":    n.name,
		"k3s.io/internal-ip": n.address,
	}
	if n.role == roleServer {
		// Servers of a datastore cluster run no etcd, and k3s gives them no etcd role.
		maps.Copy(labels, k3smodel.ServerRoleLabels(n.etcdMember != ""))
		if n.etcdMember != "" {
			annotations[etcdNodeNameAnnotation] = n.etcdMember
			annotations[etcdNodeAddressAnnotation] = n.address
		}
	}
	for _, l := range n.labels {
		k, v, _ := strings.Cut(l, "=")
		labels[k] = v
	}
	var taints []corev1.Taint
	for _, t := range n.taints {
		taint, err := parseTaint(t)
		if err != nil {
			return nil, err
		}
		taints = append(taints, taint)
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: labels, Annotations: annotations},
		Spec:       corev1.NodeSpec{ProviderID: n.providerID, Taints: taints},
	}, nil
}

// parseTaint reads k3s's node-taint form, key[=value]:Effect.
func parseTaint(s string) (corev1.Taint, error) {
	kv, effect, ok := strings.Cut(s, ":")
	if !ok {
		return corev1.Taint{}, fmt.Errorf("node-taint %q has no effect (key=value:Effect)", s)
	}
	switch e := corev1.TaintEffect(effect); e {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		k, v, _ := strings.Cut(kv, "=")
		return corev1.Taint{Key: k, Value: v, Effect: e}, nil
	default:
		return corev1.Taint{}, fmt.Errorf("node-taint %q: unknown effect %q", s, effect)
	}
}

// register creates the Node, unless it exists, and marks it Ready as its kubelet
// would. An existing Node of the same name but another machine is an error: k3s
// refuses a node name that another node's password holds. The taints a Node is
// created with are recorded in wc, since they are gone once Cluster API removed its
// uninitialized taint.
//
// k3s hands node-taint to the kubelet as RegisterWithTaints (parsed by
// k8s.io/kubernetes's taints.ParseTaints), the same in v1.34.9 and v1.36.2
// (pkg/daemons/agent/agent.go), for servers and agents; the kubelet sets them only
// when it creates its Node object, so a restart never puts a removed taint back.
func (n node) register(ctx context.Context, c client.Client, wc *workloadCluster) error {
	obj, err := n.object()
	if err != nil {
		return err
	}
	wc.kubeletRuns(n.name, n.version)
	err = c.Create(ctx, obj)
	if err == nil {
		wc.noteRegistered(obj.Name, obj.Spec.Taints)
	} else {
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("registering Node %s: %w", n.name, err)
		}
		if err := c.Get(ctx, client.ObjectKey{Name: n.name}, obj); err != nil {
			return err
		}
		if obj.Spec.ProviderID != n.providerID {
			return fmt.Errorf("node name %s is taken by %s: k3s would refuse to register this node", n.name, obj.Spec.ProviderID)
		}
		if nodeReady(obj) {
			return nil
		}
	}
	now := metav1.Now()
	obj.Status = corev1.NodeStatus{
		Conditions: kubeletConditions(now),
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: n.address},
			{Type: corev1.NodeHostName, Address: n.name},
		},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion: n.version, OperatingSystem: "linux",
			Architecture: "amd64", ContainerRuntimeVersion: "containerd://2.0.0-k3s1",
		},
	}
	if err := c.Status().Update(ctx, obj); err != nil {
		return fmt.Errorf("marking Node %s Ready: %w", n.name, err)
	}
	return nil
}

// kubeletConditions are what a healthy kubelet reports: Ready, and no pressure.
func kubeletConditions(now metav1.Time) []corev1.NodeCondition {
	conds := []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now,
	}}
	for _, p := range []struct {
		t      corev1.NodeConditionType
		reason string
	}{
		{corev1.NodeMemoryPressure, "KubeletHasSufficientMemory"},
		{corev1.NodeDiskPressure, "KubeletHasNoDiskPressure"},
		{corev1.NodePIDPressure, "KubeletHasSufficientPID"},
	} {
		conds = append(conds, corev1.NodeCondition{
			Type: p.t, Status: corev1.ConditionFalse, Reason: p.reason, LastHeartbeatTime: now, LastTransitionTime: now,
		})
	}
	return conds
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// noteRegistered records the taints a Node was created with.
func (c *workloadCluster) noteRegistered(name string, taints []corev1.Taint) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.registeredTaints == nil {
		c.registeredTaints = map[string][]corev1.Taint{}
	}
	c.registeredTaints[name] = slices.Clone(taints)
}

// RegisteredTaints are the taints a Cluster's Node had when its kubelet created it;
// nil for a Node the simulator did not register.
func (p *Provider) RegisteredTaints(cluster types.NamespacedName, node string) []corev1.Taint {
	c := p.cluster(cluster)
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.registeredTaints[node])
}
