package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/envtest"
)

// What k3s and the control plane agree on, as the controller writes it
// (internal/controlplane/etcd.go): this test checks the contract from outside.
const (
	etcdMemberHook        = clusterv1.PreTerminateDeleteHookAnnotationPrefix + "/kthrees-etcd"
	etcdRemoveAnnotation  = "etcd.k3s.cattle.io/remove"
	etcdRemovedAnnotation = "etcd.k3s.cattle.io/removed-node-name"
	etcdRoleLabel         = "node-role.kubernetes.io/etcd"
)

// TestScaleDownHandsEtcdMembershipOver: a server leaves only after k3s removed its etcd
// member. While k3s does not answer, the Machine stays, held by its pre-terminate
// hook, with its Node asked to leave; once k3s answers, it goes. Two servers leave one
// after the other, never two member removals at once.
func TestScaleDownHandsEtcdMembershipOver(t *testing.T) {
	s := newScenario(t)
	s.createControlPlane(3)
	s.waitForReplicas(3)
	for _, m := range s.machines() {
		if _, ok := m.Annotations[etcdMemberHook]; !ok {
			t.Errorf("server %s has no %s hook: %v", m.Name, etcdMemberHook, m.Annotations)
		}
	}

	s.infra.etcd.hold()
	s.scaleTo(1)
	first := s.checkEtcdRemovalHeld()
	// Only the first server's removal is answered: the second is held in turn.
	s.infra.etcd.hold(nodeName(first))
	s.waitForMachineGone(first)

	second := s.checkEtcdRemovalHeld()
	if second.Name == first.Name {
		t.Fatalf("the same Machine %s was deleted twice", first.Name)
	}
	s.infra.etcd.answer()
	s.waitForMachineGone(second)

	s.waitForReplicas(1)
	last := s.machines()[0]
	node := &corev1.Node{}
	s.must("reading the last server's Node", s.workload.Get(context.Background(), client.ObjectKey{Name: nodeName(&last)}, node))
	if v, ok := node.Annotations[etcdRemoveAnnotation]; ok {
		t.Errorf("the last server's Node %s was asked to leave etcd (%s=%s)", node.Name, etcdRemoveAnnotation, v)
	}
	err := envtest.Eventually(context.Background(), time.Minute, func(context.Context) (bool, error) {
		return conditions.IsTrue(s.getKCP(), controlplanev1.EtcdClusterHealthyCondition), nil
	})
	if err != nil {
		t.Errorf("EtcdClusterHealthy is not True with one healthy server: %+v", conditions.Get(s.getKCP(), controlplanev1.EtcdClusterHealthyCondition))
	}
}

func nodeName(m *clusterv1.Machine) string {
	if m.Status.NodeRef.Name != "" {
		return m.Status.NodeRef.Name
	}
	// The stand-in registers each Node under its infrastructure machine's name.
	return m.Spec.InfrastructureRef.Name
}

// etcdHandshake is one look at the handshake: the Machines being deleted, and the
// Nodes asked to leave etcd that k3s has not answered yet.
type etcdHandshake struct {
	deleting   []clusterv1.Machine
	unanswered []string
}

// lookAtEtcdHandshake takes one look and fails the test if two member removals are
// in flight at once, or a server that is not being deleted was asked to leave.
func (s *scenario) lookAtEtcdHandshake() etcdHandshake {
	s.t.Helper()
	var h etcdHandshake
	// Nodes first: a Node is asked to leave only after its Machine was deleted, so a
	// Machine listed after the Node cannot look as if it stays when it does not.
	nodes := &corev1.NodeList{}
	s.must("listing Nodes", s.workload.List(context.Background(), nodes))
	staying := map[string]bool{}
	for _, m := range s.machines() {
		if m.DeletionTimestamp.IsZero() {
			staying[nodeName(&m)] = true
		} else {
			h.deleting = append(h.deleting, m)
		}
	}
	for _, n := range nodes.Items {
		if n.Annotations[etcdRemoveAnnotation] != "true" {
			continue
		}
		if staying[n.Name] {
			s.t.Fatalf("Node %s was asked to leave etcd, but its server is not being deleted", n.Name)
		}
		if n.Annotations[etcdRemovedAnnotation] == "" {
			h.unanswered = append(h.unanswered, n.Name)
		}
	}
	if len(h.unanswered) > 1 {
		s.t.Fatalf("%d etcd member removals in flight at once: %s", len(h.unanswered), strings.Join(h.unanswered, ", "))
	}
	return h
}

// checkEtcdRemovalHeld waits until a deleted server's Node is asked to leave etcd
// (k3s holding its answer), then checks for a few seconds that the server stays,
// held by its hook at CAPI's pre-terminate phase, and that the control plane reports
// the pending removal. It returns that Machine.
func (s *scenario) checkEtcdRemovalHeld() *clusterv1.Machine {
	s.t.Helper()
	ctx := context.Background()
	var victim *clusterv1.Machine
	err := envtest.Eventually(ctx, 2*time.Minute, func(context.Context) (bool, error) {
		h := s.lookAtEtcdHandshake()
		if len(h.deleting) > 1 {
			return false, fmt.Errorf("%d servers deleted at once", len(h.deleting))
		}
		if len(h.deleting) == 1 && len(h.unanswered) == 1 && h.unanswered[0] == nodeName(&h.deleting[0]) {
			victim = &h.deleting[0]
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		s.t.Fatalf("no deleted server's Node was asked to leave etcd: %v", err)
	}

	// Nothing wakes a test when something does not happen: it looks repeatedly.
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		m := &clusterv1.Machine{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(victim), m); err != nil {
			s.t.Fatalf("while k3s held its answer, Machine %s went: %v", victim.Name, err)
		}
		if _, ok := m.Annotations[etcdMemberHook]; !ok {
			s.t.Fatalf("while k3s held its answer, the hook of Machine %s was released", victim.Name)
		}
		if c := conditions.Get(m, clusterv1.MachineDeletingCondition); c == nil || c.Reason != clusterv1.MachineDeletingWaitingForPreTerminateHookReason {
			s.t.Fatalf("Machine %s is not waiting at pre-terminate: %+v", victim.Name, c)
		}
		if h := s.lookAtEtcdHandshake(); len(h.unanswered) != 1 || h.unanswered[0] != nodeName(victim) {
			s.t.Fatalf("unanswered removals %v, want only %s", h.unanswered, nodeName(victim))
		}
	}
	kcp := s.getKCP()
	if c := conditions.Get(kcp, controlplanev1.EtcdClusterHealthyCondition); c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, victim.Name) {
		s.t.Errorf("EtcdClusterHealthy = %+v while %s leaves etcd, want False naming it", c, victim.Name)
	}
	return victim
}

// waitForMachineGone waits until the Machine is deleted, checking the handshake at
// every look.
func (s *scenario) waitForMachineGone(m *clusterv1.Machine) {
	s.t.Helper()
	err := envtest.Eventually(context.Background(), 2*time.Minute, func(ctx context.Context) (bool, error) {
		s.lookAtEtcdHandshake()
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(m), &clusterv1.Machine{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		s.t.Fatalf("Machine %s was not deleted once k3s answered: %v", m.Name, err)
	}
}
