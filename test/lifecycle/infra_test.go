package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
	"sigs.k8s.io/cluster-api/util/test/builder"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// infraProvider stands in for an infrastructure provider and for the machines'
// kubelets: each GenericInfrastructureMachine gets a provider ID, is marked
// provisioned, and its Node registers Ready in the workload cluster. Its etcd
// responder plays k3s's etcd member controller in that cluster.
type infraProvider struct {
	workload client.Client
	mgmt     client.Client
	etcd     *etcdResponder
}

func genericInfraMachine() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(builder.InfrastructureGroupVersion.WithKind(builder.GenericInfrastructureMachineKind))
	return u
}

func (p *infraProvider) setupWithManager(mgr ctrl.Manager) error {
	p.mgmt = mgr.GetClient()
	// The responder runs, and stops, with the manager.
	p.etcd = newEtcdResponder(p.workload)
	if err := mgr.Add(p.etcd); err != nil {
		return err
	}
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
	// The first machine tells the responder which workload cluster to watch; k3s's
	// controller starts with the first server too.
	cluster := client.ObjectKey{Namespace: m.GetNamespace(), Name: m.GetLabels()[clusterv1.ClusterNameLabel]}
	if err := p.etcd.connect(ctx, p.mgmt, cluster); err != nil {
		return ctrl.Result{}, err
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
			etcdRoleLabel:                           "true",
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

// setNodeReady sets the Node's conditions as its kubelet (or its silence) would: Ready,
// and no memory, disk or PID pressure. CAPI's Machine controller reads all four for the
// Machine's NodeHealthy, and the control plane counts the Machines' Ready conditions.
func (p *infraProvider) setNodeReady(ctx context.Context, name string, ready bool) error {
	node := &corev1.Node{}
	if err := p.workload.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return err
	}
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	now := metav1.Now()
	node.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: status, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now,
	}}
	for _, pressure := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{
			Type: pressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficient", LastHeartbeatTime: now, LastTransitionTime: now,
		})
	}
	return p.workload.Status().Update(ctx, node)
}

// etcdResponder plays k3s's etcd member controller (k3s pkg/etcd/member_controller.go):
// it watches the workload cluster's Nodes and, when an etcd member's Node is annotated
// etcd.k3s.cattle.io/remove=true, "removes the member" and records it with
// etcd.k3s.cattle.io/removed-node-name (k3s writes the member's name there; the Node's
// name will do). It answers by default; hold keeps requests unanswered, so that a test
// can look at a handshake in the middle.
type etcdResponder struct {
	workload client.Client
	// configs hands the workload cluster's REST config from connect to Start, once.
	configs chan *rest.Config
	// kicks asks the loop to look at the Nodes again; one pending kick is enough.
	kicks chan struct{}

	mu        sync.Mutex
	connected bool
	// foreign are the clusters whose kubeconfig leads elsewhere: every stack sees the
	// whole management apiserver, earlier tests' clusters included.
	foreign map[client.ObjectKey]bool
	held    bool
	allowed map[string]bool
}

func newEtcdResponder(workload client.Client) *etcdResponder {
	return &etcdResponder{
		workload: workload, foreign: map[client.ObjectKey]bool{},
		configs: make(chan *rest.Config, 1), kicks: make(chan struct{}, 1),
	}
}

// hold keeps removal requests unanswered from now on, except those of the Nodes
// named in allow.
func (e *etcdResponder) hold(allow ...string) {
	e.mu.Lock()
	e.held, e.allowed = true, map[string]bool{}
	for _, n := range allow {
		e.allowed[n] = true
	}
	e.mu.Unlock()
	e.kick()
}

// answer answers every removal request again, the ones held so far first.
func (e *etcdResponder) answer() {
	e.mu.Lock()
	e.held, e.allowed = false, nil
	e.mu.Unlock()
	e.kick()
}

func (e *etcdResponder) answers(node string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.held || e.allowed[node]
}

func (e *etcdResponder) kick() {
	select {
	case e.kicks <- struct{}{}:
	default:
	}
}

// connect gives the responder the workload cluster to watch, from the kubeconfig the
// control plane wrote for cluster, if that kubeconfig leads to this stand-in's
// workload apiserver (the two have the same kube-system namespace); once connected,
// it does nothing.
func (e *etcdResponder) connect(ctx context.Context, mgmt client.Reader, cluster client.ObjectKey) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.connected || e.foreign[cluster] {
		return nil
	}
	data, err := kubeconfig.FromSecret(ctx, mgmt, cluster)
	if err != nil {
		// The control plane writes the kubeconfig before any machine: retry.
		return fmt.Errorf("etcd responder: reading the workload kubeconfig: %w", err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return fmt.Errorf("etcd responder: %w", err)
	}
	cfg.Timeout = 5 * time.Second
	ours, theirs := &corev1.Namespace{}, &corev1.Namespace{}
	if err := e.workload.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ours); err != nil {
		return fmt.Errorf("etcd responder: %w", err)
	}
	c, err := client.New(cfg, client.Options{})
	if err == nil {
		err = c.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, theirs)
	}
	if err != nil || theirs.UID != ours.UID {
		// Unreachable (an earlier test's workload, stopped) or another apiserver.
		e.foreign[cluster] = true
		return nil
	}
	e.configs <- cfg
	e.connected = true
	return nil
}

// Start watches the workload Nodes until ctx ends (the manager stops), answering
// removal requests as they come. Failures are retried: an error returned here would
// stop the whole manager.
func (e *etcdResponder) Start(ctx context.Context) error {
	var cfg *rest.Config
	select {
	case <-ctx.Done():
		return nil
	case cfg = <-e.configs:
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("etcd responder: %w", err)
	}
	log := ctrl.Log.WithName("etcd-responder")
	for ctx.Err() == nil {
		if err := e.watch(ctx, clientset); err != nil && ctx.Err() == nil {
			log.Error(err, "Watching workload Nodes; retrying")
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

// watch lists the Nodes, then follows their changes, answering after each change or
// kick; it returns when the watch ends (the caller lists again) or on an error.
func (e *etcdResponder) watch(ctx context.Context, clientset kubernetes.Interface) error {
	list, err := clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	nodes := map[string]*corev1.Node{}
	for i := range list.Items {
		nodes[list.Items[i].Name] = &list.Items[i]
	}
	w, err := clientset.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		if err := e.respond(ctx, nodes); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-e.kicks:
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			n, isNode := ev.Object.(*corev1.Node)
			if !isNode {
				return fmt.Errorf("watching Nodes: %v", ev.Object)
			}
			if ev.Type == watch.Deleted {
				delete(nodes, n.Name)
			} else {
				nodes[n.Name] = n
			}
		}
	}
}

// respond answers every unanswered removal request of an etcd member that it may.
func (e *etcdResponder) respond(ctx context.Context, nodes map[string]*corev1.Node) error {
	for _, n := range nodes {
		if n.Labels[etcdRoleLabel] != "true" || !strings.EqualFold(n.Annotations[etcdRemoveAnnotation], "true") ||
			n.Annotations[etcdRemovedAnnotation] != "" || !e.answers(n.Name) {
			continue
		}
		after := n.DeepCopy()
		after.Annotations[etcdRemovedAnnotation] = n.Name
		if err := e.workload.Patch(ctx, after, client.MergeFrom(n)); client.IgnoreNotFound(err) != nil {
			return err
		}
		// The watch brings the change; until then the Node is not answered twice.
		nodes[n.Name] = after
	}
	return nil
}
