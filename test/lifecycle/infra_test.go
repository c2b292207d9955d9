package lifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cluster-api/util/test/builder"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// infraProvider stands in for an infrastructure provider and for the machines'
// kubelets: each GenericInfrastructureMachine gets a provider ID, is marked
// provisioned, and its Node registers Ready in the workload cluster.
type infraProvider struct {
	workload client.Client
	mgmt     client.Client
}

func genericInfraMachine() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(builder.InfrastructureGroupVersion.WithKind(builder.GenericInfrastructureMachineKind))
	return u
}

func (p *infraProvider) setupWithManager(mgr ctrl.Manager) error {
	p.mgmt = mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).Named("test-infrastructure").For(genericInfraMachine()).Complete(p)
}

func providerID(m client.Object) string {
	return "capk3s-test://" + m.GetNamespace() + "/" + m.GetName()
}

func (p *infraProvider) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	m := genericInfraMachine()
	if err := p.mgmt.Get(ctx, req.NamespacedName, m); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !m.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil
	}
	if id, _, _ := unstructured.NestedString(m.Object, "spec", "providerID"); id == "" {
		before := m.DeepCopy()
		if err := unstructured.SetNestedField(m.Object, providerID(m), "spec", "providerID"); err != nil {
			return ctrl.Result{}, err
		}
		if err := p.mgmt.Patch(ctx, m, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := p.registerNode(ctx, m.GetName(), providerID(m)); err != nil {
		return ctrl.Result{}, err
	}
	if ok, _, _ := unstructured.NestedBool(m.Object, "status", "initialization", "provisioned"); !ok {
		before := m.DeepCopy()
		if err := unstructured.SetNestedField(m.Object, true, "status", "initialization", "provisioned"); err != nil {
			return ctrl.Result{}, err
		}
		if err := p.mgmt.Status().Patch(ctx, m, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// registerNode does what a k3s server's kubelet does when it joins.
func (p *infraProvider) registerNode(ctx context.Context, name, providerID string) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"node-role.kubernetes.io/control-plane": "true",
			"node-role.kubernetes.io/etcd":          "true",
		}},
		Spec: corev1.NodeSpec{ProviderID: providerID},
	}
	if err := p.workload.Create(ctx, node); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("registering node %s: %w", name, err)
	}
	return p.setNodeReady(ctx, name, true)
}

// setNodeReady sets the Node's Ready condition, as its kubelet (or its silence) would.
func (p *infraProvider) setNodeReady(ctx context.Context, name string, ready bool) error {
	node := &corev1.Node{}
	if err := p.workload.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return err
	}
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	node.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: status, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
	}}
	return p.workload.Status().Update(ctx, node)
}
