package lifecycle

import (
	"context"
	"fmt"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/cluster-api/util/test/builder"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/secretcache"
	"github.com/capk3s/capk3s/internal/token"
	"github.com/capk3s/capk3s/test/envtest"
)

const clusterName = "k3s"

type scenario struct {
	t        *testing.T
	ns       string
	cluster  *clusterv1.Cluster
	kcp      *controlplanev1.KThreesControlPlane
	infra    *infraProvider
	stack    *stack
	workload client.Client
	// workloadConfig reaches the workload API as an admin.
	workloadConfig *rest.Config
}

// newScenario creates a Cluster whose CAs exist up front, a workload API that trusts
// them, the infrastructure stand-in, and the whole controller stack.
func newScenario(t *testing.T) *scenario {
	t.Helper()
	ctx := context.Background()
	s := &scenario{t: t, ns: env.NewNamespace(t)}

	s.cluster = &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: clusterName},
		Spec: clusterv1.ClusterSpec{
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureClusterKind, Name: clusterName,
			},
			ControlPlaneRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: controlplanev1.GroupVersion.Group, Kind: "KThreesControlPlane", Name: clusterName + "-control-plane",
			},
		},
	}
	s.must("creating Cluster", env.Client.Create(ctx, s.cluster))

	// The CAs are made first so that the workload API can be started with them; the
	// control plane then finds and takes them over, as it does for clusters it adopts.
	certs := k3s.ClusterCertificates()
	s.must("generating CAs", certs.Generate())
	s.must("saving CAs", certs.SaveGenerated(ctx, env.Client, client.ObjectKeyFromObject(s.cluster), metav1.OwnerReference{
		APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: s.cluster.Name, UID: s.cluster.UID,
	}))
	serverCA, clientCA := certs.GetByPurpose(secret.ClusterCA).KeyPair, certs.GetByPurpose(k3s.ClientCA).KeyPair
	w, err := envtest.StartWorkloadAPIServer(serverCA.Cert, serverCA.Key, clientCA.Cert)
	s.must("starting the workload API", err)
	t.Cleanup(func() { _ = w.Stop() })
	cfg, err := w.AdminConfig(clientCA.Cert, clientCA.Key)
	s.must("workload admin config", err)
	s.workloadConfig = cfg
	s.workload, err = client.New(cfg, client.Options{})
	s.must("workload client", err)

	s.infra = &infraProvider{workload: s.workload}
	s.stack = startStack(t, s.infra)

	infraCluster := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"controlPlaneEndpoint": map[string]any{"host": w.Host, "port": int64(w.Port)}},
	}}
	infraCluster.SetGroupVersionKind(builder.InfrastructureGroupVersion.WithKind(builder.GenericInfrastructureClusterKind))
	infraCluster.SetNamespace(s.ns)
	infraCluster.SetName(clusterName)
	s.must("creating infrastructure cluster", env.Client.Create(ctx, infraCluster))
	s.must("provisioning infrastructure cluster", unstructured.SetNestedField(infraCluster.Object, true, "status", "initialization", "provisioned"))
	s.must("provisioning infrastructure cluster", env.Client.Status().Update(ctx, infraCluster))

	template := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{}}},
	}}
	template.SetGroupVersionKind(builder.InfrastructureGroupVersion.WithKind(builder.GenericInfrastructureMachineTemplateKind))
	template.SetNamespace(s.ns)
	template.SetName("servers")
	s.must("creating infrastructure template", env.Client.Create(ctx, template))
	return s
}

func (s *scenario) must(what string, err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatalf("%s: %v", what, err)
	}
}

func (s *scenario) createControlPlane(replicas int32, edits ...func(*controlplanev1.KThreesControlPlane)) {
	s.kcp = &controlplanev1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: clusterName + "-control-plane",
			Labels: map[string]string{clusterv1.ClusterNameLabel: clusterName}},
		Spec: controlplanev1.KThreesControlPlaneSpec{
			Replicas: ptr.To(replicas),
			Version:  "v1.35.4+k3s1",
			MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{
				ObjectMeta: clusterv1.ObjectMeta{Labels: map[string]string{"team": "platform"}},
				Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineTemplateKind, Name: "servers",
					},
				},
			},
		},
	}
	for _, edit := range edits {
		edit(s.kcp)
	}
	s.must("creating KThreesControlPlane", env.Client.Create(context.Background(), s.kcp))
}

func (s *scenario) getKCP() *controlplanev1.KThreesControlPlane {
	s.t.Helper()
	kcp := &controlplanev1.KThreesControlPlane{}
	s.must("reading KThreesControlPlane", env.Client.Get(context.Background(), client.ObjectKeyFromObject(s.kcp), kcp))
	return kcp
}

func (s *scenario) machines() []clusterv1.Machine {
	s.t.Helper()
	list := &clusterv1.MachineList{}
	s.must("listing Machines", env.Client.List(context.Background(), list, client.InNamespace(s.ns),
		client.MatchingLabels{clusterv1.MachineControlPlaneNameLabel: s.kcp.Name}))
	return list.Items
}

// readyNodes counts the workload cluster's Ready nodes.
func (s *scenario) readyNodes() int {
	s.t.Helper()
	nodes := &corev1.NodeList{}
	s.must("listing Nodes", s.workload.List(context.Background(), nodes))
	n := 0
	for _, node := range nodes.Items {
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

// waitForReplicas waits until status reports want servers, all ready and up to date,
// checking at every look that servers come and go one at a time.
func (s *scenario) waitForReplicas(want int32) *controlplanev1.KThreesControlPlane {
	s.t.Helper()
	var last *controlplanev1.KThreesControlPlane
	err := envtest.Eventually(context.Background(), 3*time.Minute, func(context.Context) (bool, error) {
		machines := s.machines()
		deleting, pending := 0, len(machines)-s.readyNodes()
		for _, m := range machines {
			if !m.DeletionTimestamp.IsZero() {
				deleting++
			}
		}
		if deleting > 1 || pending > 1 {
			return false, fmt.Errorf("more than one operation at a time: %d Machines, %d deleting, %d without a Ready node", len(machines), deleting, pending)
		}
		last = s.getKCP()
		st := last.Status
		return ptr.Deref(st.Replicas, -1) == want && ptr.Deref(st.ReadyReplicas, -1) == want &&
			ptr.Deref(st.AvailableReplicas, -1) == want && ptr.Deref(st.UpToDateReplicas, -1) == want &&
			len(machines) == int(want), nil
	})
	if err != nil {
		s.t.Fatalf("waiting for %d servers: %v; last status %+v", want, err, last.Status)
	}
	return last
}

func (s *scenario) scaleTo(replicas int32) {
	s.t.Helper()
	ctx := context.Background()
	scale := &autoscalingv1.Scale{}
	s.must("reading scale", env.Client.SubResource("scale").Get(ctx, s.kcp, scale))
	scale.Spec.Replicas = replicas
	s.must("scaling", env.Client.SubResource("scale").Update(ctx, s.kcp, client.WithSubResourceBody(scale)))
}

func TestControlPlaneInitializesScalesAndReportsStatus(t *testing.T) {
	s := newScenario(t)
	s.createControlPlane(1)

	kcp := s.waitForReplicas(1)
	if !ptr.Deref(kcp.Status.Initialization.ControlPlaneInitialized, false) {
		t.Error("status.initialization.controlPlaneInitialized is not true with a Ready server")
	}
	if kcp.Status.Version != "v1.35.4+k3s1" || kcp.Status.Selector == "" {
		t.Errorf("status version %q selector %q", kcp.Status.Version, kcp.Status.Selector)
	}
	for _, c := range []string{controlplanev1.AvailableCondition, controlplanev1.CertificatesAvailableCondition,
		controlplanev1.TokenAvailableCondition, controlplanev1.MachinesReadyCondition, controlplanev1.MachinesUpToDateCondition} {
		if !conditions.IsTrue(kcp, c) {
			t.Errorf("condition %s is not True: %+v", c, conditions.Get(kcp, c))
		}
	}
	s.checkSecretsOwnedByControlPlane(kcp)
	if m := s.machines()[0]; m.Labels["team"] != "platform" || m.Labels[clusterv1.MachineControlPlaneLabel] != "" {
		t.Errorf("server labels = %v", m.Labels)
	}

	s.scaleTo(3)
	s.waitForReplicas(3)
	s.checkClusterSeesServersUpToDate()
	s.checkIdleReconcileWritesNothing()
	s.checkNodeNotReadyIsReported()

	s.scaleTo(1)
	kcp = s.waitForReplicas(1)
	if conditions.IsTrue(kcp, controlplanev1.ScalingDownCondition) || conditions.IsTrue(kcp, controlplanev1.ScalingUpCondition) {
		t.Errorf("scaling conditions still True at rest: %+v", kcp.Status.Conditions)
	}

	s.checkTemplateMetadataPropagatesInPlace()
	s.checkDeletionRemovesServersThenTheControlPlane()
}

// checkTemplateMetadataPropagatesInPlace: a label and a drain timeout changed on the
// machine template reach the existing server without replacing it.
func (s *scenario) checkTemplateMetadataPropagatesInPlace() {
	s.t.Helper()
	ctx := context.Background()
	before := s.machines()[0]
	kcp := s.getKCP()
	patchFrom := client.MergeFrom(kcp.DeepCopy())
	kcp.Spec.MachineTemplate.ObjectMeta.Labels["tier"] = "gold"
	kcp.Spec.MachineTemplate.Spec.Deletion.NodeDrainTimeoutSeconds = ptr.To[int32](90)
	s.must("changing the machine template", env.Client.Patch(ctx, kcp, patchFrom))
	infra := genericInfraMachine()
	err := envtest.Eventually(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		ms := s.machines()
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: before.Spec.InfrastructureRef.Name}, infra); err != nil {
			return false, err
		}
		return len(ms) == 1 && ms[0].Labels["tier"] == "gold" &&
			ptr.Deref(ms[0].Spec.Deletion.NodeDrainTimeoutSeconds, 0) == 90 &&
			infra.GetLabels()["tier"] == "gold", nil
	})
	if err != nil {
		s.t.Fatalf("template changes did not reach the server and its infrastructure machine: %v (infra labels %v)", err, infra.GetLabels())
	}
	if after := s.machines()[0]; after.UID != before.UID {
		s.t.Errorf("the server was replaced (%s -> %s); metadata must propagate in place", before.Name, after.Name)
	}
}

// checkDeletionRemovesServersThenTheControlPlane: deleting the control plane deletes
// its servers, and the finalizer goes only when they are gone.
func (s *scenario) checkDeletionRemovesServersThenTheControlPlane() {
	s.t.Helper()
	ctx := context.Background()
	s.must("deleting the control plane", env.Client.Delete(ctx, s.getKCP()))
	err := envtest.Eventually(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(s.kcp), &controlplanev1.KThreesControlPlane{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		s.t.Fatalf("the control plane was not deleted: %v", err)
	}
	if ms := s.machines(); len(ms) != 0 {
		s.t.Errorf("the control plane is gone but %d of its Machines remain", len(ms))
	}
}

func (s *scenario) checkSecretsOwnedByControlPlane(kcp *controlplanev1.KThreesControlPlane) {
	s.t.Helper()
	for _, name := range []string{
		secret.Name(clusterName, secret.ClusterCA), secret.Name(clusterName, k3s.ClientCA),
		secret.Name(clusterName, secret.EtcdCA), secret.Name(clusterName, secret.Kubeconfig), token.SecretName(clusterName),
	} {
		sec := &corev1.Secret{}
		s.must("reading Secret "+name, env.Client.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: name}, sec))
		if ref := metav1.GetControllerOf(sec); ref == nil || ref.UID != kcp.UID {
			s.t.Errorf("Secret %s controller = %+v, want the KThreesControlPlane", name, ref)
		}
	}
}

// checkClusterSeesServersUpToDate: CAPI's Cluster controller aggregates the servers'
// UpToDate conditions, which only the control plane sets; without them the Cluster's
// ControlPlaneMachinesUpToDate stays Unknown forever.
func (s *scenario) checkClusterSeesServersUpToDate() {
	s.t.Helper()
	var last *metav1.Condition
	err := envtest.Eventually(context.Background(), time.Minute, func(ctx context.Context) (bool, error) {
		cluster := &clusterv1.Cluster{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s.cluster), cluster); err != nil {
			return false, err
		}
		last = conditions.Get(cluster, clusterv1.ClusterControlPlaneMachinesUpToDateCondition)
		return last != nil && last.Status == metav1.ConditionTrue, nil
	})
	if err != nil {
		s.t.Errorf("the Cluster's %s never became True: %v; last %+v", clusterv1.ClusterControlPlaneMachinesUpToDateCondition, err, last)
	}
}

// checkIdleReconcileWritesNothing runs one more pass of the control plane with a
// counting client, while everything is up to date: it must not write at all, and it
// must neither read nor list any of the cluster's Secrets from the API server (they come
// from the Secret cache, as in the managers).
func (s *scenario) checkIdleReconcileWritesNothing() {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.waitUntilSettled(ctx)
	counting, err := env.NewCountingClient()
	s.must("counting client", err)
	secrets, err := secretcache.NewCache(ctx, env.Config, cache.Options{Scheme: env.Scheme}, controlplane.CachedSecretPurposes())
	s.must("Secret cache", err)
	go func() { _ = secrets.Start(ctx) }()
	if !secrets.WaitForCacheSync(ctx) {
		s.t.Fatal("the Secret cache did not sync")
	}
	live := &secretGetCounter{Reader: counting}
	r := &controlplane.Reconciler{
		Client: counting, APIReader: counting, ClusterCache: s.stack.clusterCache,
		Secrets: secretcache.FromCache(secrets, live),
	}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(s.kcp)}
	if _, err := r.Reconcile(ctx, req); err != nil {
		s.t.Fatalf("idle reconcile: %v", err)
	}
	if counting.Writes() != 0 {
		s.t.Errorf("an idle control plane wrote: %v", counting.Counts())
	}
	if live.gets != 0 || live.lists != 0 {
		s.t.Errorf("an idle control plane read %d Secrets from the API server (%v) and listed them %d times", live.gets, live.names, live.lists)
	}
}

// waitUntilSettled waits until the shared manager has stopped writing the control
// plane (its resourceVersion unchanged for 3 s): right after a scale-up, the servers'
// conditions are still arriving, and a pass then has real work to write. Idle means
// after that.
func (s *scenario) waitUntilSettled(ctx context.Context) {
	s.t.Helper()
	var last string
	var since time.Time
	err := envtest.Eventually(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		kcp := &controlplanev1.KThreesControlPlane{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s.kcp), kcp); err != nil {
			return false, err
		}
		if kcp.ResourceVersion != last {
			last, since = kcp.ResourceVersion, time.Now()
			return false, nil
		}
		return time.Since(since) >= 3*time.Second, nil
	})
	s.must("waiting for the control plane to settle", err)
}

// secretGetCounter counts the Secret reads and lists that reach the API server.
type secretGetCounter struct {
	client.Reader
	gets  int
	names []string
	lists int
}

func (c *secretGetCounter) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*corev1.SecretList); ok {
		c.lists++
	}
	return c.Reader.List(ctx, list, opts...)
}

func (c *secretGetCounter) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok {
		c.gets++
		c.names = append(c.names, key.Name)
	}
	return c.Reader.Get(ctx, key, obj, opts...)
}

// checkNodeNotReadyIsReported: readiness is recomputed every pass, never sticky.
func (s *scenario) checkNodeNotReadyIsReported() {
	s.t.Helper()
	ctx := context.Background()
	victim := s.machines()[0].Spec.InfrastructureRef.Name
	s.must("making a node NotReady", s.infra.setNodeReady(ctx, victim, false))
	err := envtest.Eventually(ctx, time.Minute, func(context.Context) (bool, error) {
		kcp := s.getKCP()
		return ptr.Deref(kcp.Status.ReadyReplicas, -1) == 2 && conditions.IsFalse(kcp, controlplanev1.MachinesReadyCondition), nil
	})
	if err != nil {
		s.t.Fatalf("a NotReady node was not reported: %v; status %+v", err, s.getKCP().Status)
	}
	s.must("making the node Ready again", s.infra.setNodeReady(ctx, victim, true))
	s.waitForReplicas(3)
}
