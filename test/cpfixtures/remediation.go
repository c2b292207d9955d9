package cpfixtures

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"

	"github.com/capk3s/capk3s/internal/k3s"
)

// RemediationNow is the instant the remediation tests are judged at.
var RemediationNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// RemediationForAnnotation is where the control plane records, on a replacement, the
// remediation it replaces. The product's name for it lives in serverplan, which
// cannot be imported here (its tests import this package); serverplan's tests check
// the two agree.
const RemediationForAnnotation = "controlplane.cluster.x-k8s.io/remediation-for"

// Server is a control plane Machine of a remediation test, and its Node; age orders
// servers.
type Server struct {
	Name      string
	Age       time.Duration
	Unhealthy bool // marked by a MachineHealthCheck for its owner to remediate
	Ready     bool // its node is Ready
	Deleting  bool
	// RemediationFor, when set, is its remediation-for annotation as is: it makes
	// it a replacement of that remediation.
	RemediationFor string
	// MarkedAgo and ReadyAgo, when set, are how long ago the health check marked it
	// unhealthy and how long ago its node's Ready condition last changed.
	MarkedAgo, ReadyAgo time.Duration
	// MemberRemoved: k3s has removed its node's etcd member (newer k3s: removed-node-name
	// alone, the remove annotation consumed), though the node is still Ready.
	MemberRemoved bool
	// Annotations are more annotations of its Machine (an in-place update's or a
	// certificate renewal's marks, say).
	Annotations map[string]string
}

// Machine is the server's Machine at RemediationNow.
func (s Server) Machine() *clusterv1.Machine {
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{
		Name: s.Name, CreationTimestamp: metav1.NewTime(RemediationNow.Add(-s.Age)),
	}}
	if s.Deleting {
		m.DeletionTimestamp = ptr.To(metav1.NewTime(RemediationNow.Add(-time.Minute)))
	}
	if s.Unhealthy {
		MarkUnhealthy(m)
		if s.MarkedAgo != 0 {
			c := conditions.Get(m, clusterv1.MachineHealthCheckSucceededCondition)
			c.LastTransitionTime = Ago(s.MarkedAgo)
			conditions.Set(m, *c)
		}
	}
	if s.RemediationFor != "" {
		m.Annotations = map[string]string{RemediationForAnnotation: s.RemediationFor}
	}
	for k, v := range s.Annotations {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[k] = v
	}
	return m
}

// Observe is what a pass sees of servers: their Machines, and the Nodes of the ready
// ones (the shape of workload.Nodes).
func Observe(servers []Server) (collections.Machines, map[string]*corev1.Node) {
	machines, nodes := collections.New(), map[string]*corev1.Node{}
	for _, s := range servers {
		machines.Insert(s.Machine())
		if !s.Ready {
			continue
		}
		n := ReadyNode(s.Name)
		if s.ReadyAgo != 0 {
			n.Status.Conditions[0].LastTransitionTime = Ago(s.ReadyAgo)
		}
		if s.MemberRemoved {
			n.Annotations = map[string]string{k3s.EtcdRemovedNodeNameAnnotation: s.Name + "-1a2b3c4d"}
		}
		nodes[s.Name] = n
	}
	return machines, nodes
}

// Ago is the time d before RemediationNow.
func Ago(d time.Duration) metav1.Time { return metav1.NewTime(RemediationNow.Add(-d)) }
